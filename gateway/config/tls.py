"""TLS settings: the listeners' (server) and toward backends (client)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, model_validator

from gateway.config.strict import STRICT


class ServerTlsConfig(BaseModel):
    """TLS on the HTTP and gRPC listeners. Files are re-read when they change (new
    handshakes use them; open connections keep theirs)."""

    model_config = STRICT

    cert_file: str = Field(description="PEM certificate chain, leaf first")
    key_file: str = Field(description="PEM private key of the certificate")
    client_ca_file: str | None = Field(None, description="PEM CA bundle for client "
                                       "certificates (mTLS)")
    client_auth: Literal["none", "optional", "required"] = Field(
        "required", description="With client_ca_file: whether a client certificate is "
        "required (refused at the handshake without one) or only checked when sent")
    grpc_client_auth: Literal["none", "required"] | None = Field(
        None, description="The gRPC listener's client certificates. null: as client_auth, "
        "except that `optional` means `required` on gRPC (its server cannot ask for a "
        "certificate without requiring one: a client without one is refused at the "
        "handshake). `none`: gRPC clients are not asked for one (they authenticate by "
        "API key or JWT)")
    min_version: Literal["1.2", "1.3"] = Field("1.2", description="Oldest TLS version "
                                               "accepted")
    reload_interval: float = Field(10.0, ge=0, description="Seconds between checks of the "
                                   "files for changes (0: never)")


    @model_validator(mode="after")
    def _grpc_ca(self) -> ServerTlsConfig:
        if self.grpc_client_auth == "required" and self.client_ca_file is None:
            raise ValueError("grpc_client_auth: required needs client_ca_file")
        return self

    @property
    def grpc_requires_client_cert(self) -> bool:
        """Whether the gRPC listener asks for (and so requires) a client certificate."""
        if self.client_ca_file is None:
            return False
        if self.grpc_client_auth is not None:
            return self.grpc_client_auth == "required"
        return self.client_auth != "none"


class ClientTlsConfig(BaseModel):
    """TLS toward backends: `https://` URLs and gRPC channels."""

    model_config = STRICT

    ca_file: str | None = Field(None, description="PEM CA bundle trusted for the backend "
                                "(null: the system's)")
    cert_file: str | None = Field(None, description="PEM client certificate (mTLS)")
    key_file: str | None = Field(None, description="PEM key of the client certificate")
    server_name: str | None = Field(None, description="Name checked in the backend's "
                                    "certificate (null: the URL's host)")
    grpc: bool = Field(False, description="Use a secure channel toward a gRPC backend")

    @model_validator(mode="after")
    def _pair(self) -> ClientTlsConfig:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("cert_file and key_file go together")
        return self
