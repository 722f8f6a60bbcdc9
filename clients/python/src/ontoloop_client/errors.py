"""Errors: every failed call raises an OntoloopError naming the RPC, the gRPC code and the reason
the service gave."""

from __future__ import annotations

import grpc


class OntoloopError(Exception):
    """A call the service refused or could not answer.

    ``code`` is the gRPC status code, ``reason`` the service's message (for UNAUTHENTICATED, why
    the token was refused; for INVALID_ARGUMENT, the field), ``rpc`` the method called.
    """

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, rpc: str, code: grpc.StatusCode, reason: str):
        super().__init__(f"{rpc}: {code.name}: {reason}")
        self.rpc = rpc
        self.code = code
        self.reason = reason


class Unauthenticated(OntoloopError):
    """No token, or a token the services refuse (expired, wrongly signed, wrong audience...)."""


class PermissionDenied(OntoloopError):
    """The token lacks the RPC's role, or the request names another tenant or principal."""


class InvalidArgument(OntoloopError):
    """The request is malformed; the reason names the field or the limit."""


class NotFound(OntoloopError):
    """A sequence number (or other id) the caller's tenant does not have."""


class FailedPrecondition(OntoloopError):
    """The tenant is not ready for the call (a refused event waited on)."""


class ResourceExhausted(OntoloopError):
    """A limit of the service was reached; the reason names it."""


class DeadlineExceeded(OntoloopError):
    """The call took longer than the client's or the service's timeout."""


class Unavailable(OntoloopError):
    """The service could not be reached, or could not record the request; retry."""


_BY_CODE: dict[grpc.StatusCode, type[OntoloopError]] = {
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
}


def from_rpc_error(rpc: str, error: grpc.RpcError) -> OntoloopError:
    """The OntoloopError (of the subclass for its code) for a failed call."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    reason = error.details() if hasattr(error, "details") else str(error)
    cls = _BY_CODE.get(code, OntoloopError)
    return cls(rpc, code, reason or "")
