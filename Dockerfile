# a2a-gateway image: the locked dependencies and the gateway installed into a virtualenv in
# one stage, that virtualenv copied into a clean runtime (no wheels, pip caches or build
# tools in any layer). docs/deployment.md has the build and run commands.
#
# The base image is an argument so that a machine that cannot pull it can name its own
# stand-in (make image-test builds one from Debian's Python 3.11, tests/image/standin_base.sh).
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/a2a-gateway
# The lock first (requirements/runtime.txt, every file's hash checked): this layer is cached
# until the lock changes, whatever happens to the code.
COPY requirements/runtime.txt /src/requirements/runtime.txt
RUN /opt/a2a-gateway/bin/pip install --require-hashes -r /src/requirements/runtime.txt
COPY pyproject.toml README.md LICENSE /src/
COPY gateway /src/gateway
COPY translators /src/translators
RUN /opt/a2a-gateway/bin/pip install --no-deps /src

FROM ${PYTHON_IMAGE}
# pyproject.toml's version (tests/deploy/test_release.py keeps this default equal to it).
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="a2a-gateway" \
      org.opencontainers.image.description="A version- and binding-bridging reverse proxy for the A2A protocol" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
RUN useradd --system --uid 10001 --no-create-home gateway \
 && mkdir -p /var/lib/a2a-gateway /etc/a2a-gateway/tls \
 && chown 10001 /var/lib/a2a-gateway /etc/a2a-gateway/tls
# The state store (SQLite) lives here: mount a volume to keep it across restarts.
VOLUME /var/lib/a2a-gateway
COPY --from=build /opt/a2a-gateway /opt/a2a-gateway
ENV PATH=/opt/a2a-gateway/bin:$PATH
# The container's config listens on 0.0.0.0 and has no in-process demo agent.
COPY config/docker.yaml /etc/a2a-gateway/gateway.yaml
# serve and check-config read it when given no --config (docs/deployment.md).
ENV A2A_GATEWAY_CONFIG=/etc/a2a-gateway/gateway.yaml
USER 10001
EXPOSE 8080 50051
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=2)"]
ENTRYPOINT ["a2a-gateway"]
CMD ["serve", "--config", "/etc/a2a-gateway/gateway.yaml"]
