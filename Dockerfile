# a2a-gateway image: build a wheel in one stage, install it into a slim runtime.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY translators ./translators
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
RUN useradd --system --uid 10001 --no-create-home gateway \
 && mkdir -p /var/lib/a2a-gateway /etc/a2a-gateway/tls \
 && chown 10001 /var/lib/a2a-gateway /etc/a2a-gateway/tls
# The state store (SQLite) lives here: mount a volume to keep it across restarts.
VOLUME /var/lib/a2a-gateway
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
# The container's config listens on 0.0.0.0 and has no in-process demo agent.
COPY config/docker.yaml /etc/a2a-gateway/gateway.yaml
# serve and check-config read it when given no --config (README "Command line").
ENV A2A_GATEWAY_CONFIG=/etc/a2a-gateway/gateway.yaml
USER 10001
EXPOSE 8080 50051
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=2)"]
ENTRYPOINT ["a2a-gateway"]
CMD ["serve", "--config", "/etc/a2a-gateway/gateway.yaml"]
