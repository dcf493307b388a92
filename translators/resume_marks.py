"""What a resumable stream says on the wire beyond the A2A spec (our extension,
docs/streams.md "Resuming a stream"): the metadata keys that carry a journaled event's id
(gRPC has no per-message metadata of its own) and mark a Task sent in place of events
the journal could not serve, and the gRPC metadata key of a stream's cursor (SSE's
`Last-Event-ID`). SSE's own `id:`/`retry:` fields: translators/sse.py."""

from __future__ import annotations

from a2a.types import a2a_pb2 as pb

LAST_EVENT_ID = "last-event-id"  # gRPC: the request's cursor, and the end's trailing key
EVENT_ID_KEY = "a2a-gateway/event-id"  # gRPC: each journaled event's id, in its metadata
GAP_KEY = "a2a-gateway/gap"  # the Task snapshot sent for a gap: a JSON object saying why


def with_event_id(item: pb.StreamResponse, event_id: str) -> pb.StreamResponse:
    """A copy of ``item`` whose payload's metadata carries its id (every payload of a
    stream event has metadata; the journal keeps the event without it)."""
    marked = pb.StreamResponse()
    marked.CopyFrom(item)
    kind = marked.WhichOneof("payload")
    if kind is not None:
        getattr(marked, kind).metadata[EVENT_ID_KEY] = event_id
    return marked


def marked_as_gap(item: pb.StreamResponse, reason: str) -> pb.StreamResponse:
    """A copy of the Task event ``item`` marked as standing for events the client missed."""
    marked = pb.StreamResponse()
    marked.CopyFrom(item)
    marked.task.metadata[GAP_KEY] = {"reason": reason}
    return marked
