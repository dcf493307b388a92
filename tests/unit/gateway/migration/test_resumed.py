"""A stream resumed from the journal by its `Last-Event-ID` goes to the agent that owns the
task the id names, and is not copied in shadow mode (it sends the agent nothing new); on
a unary call, or with the journal off, the header changes nothing (the journal ignores it
there too)."""

from __future__ import annotations

from a2a.types import a2a_pb2 as pb

from gateway.call import Call, CallContext, ClientFacts
from gateway.config.migration import MigrationConfig
from gateway.migration.owners import owner_key
from gateway.migration.sticky import CANDIDATE
from gateway.migration.tenant import TenantMigration
from gateway.pipeline.stages import Passage
from gateway.streams.journal import cursor
from tests.support.migration_calls import chosen as chosen_by
from tests.support.migration_calls import route, ticket
from translators import operations as ops
from translators.dialects.jsonrpc import JSONRPC_V10


def tenant(mode: str, resumes: bool) -> TenantMigration:
    config = MigrationConfig.model_validate({
        "candidate": {"url": "http://127.0.0.1:2/", "version": "1.0"}, "mode": mode,
        "shadow": {"share": 1.0, "operations": ["SendMessage", "SendStreamingMessage"]}})
    m = TenantMigration("shop", config, route("http://127.0.0.1:1/"),
                        route("http://127.0.0.1:2/"), None, resumes=resumes)
    m.owners.remember(owner_key("shop", "task", "t-candidate"), CANDIDATE)
    return m


async def chosen(m: TenantMigration, op: str, streaming: bool) -> Passage:
    facts = ClientFacts("JSONRPC", resume_from=cursor("t-candidate", 3))
    call = Call(ops.BY_NAME[op], pb.SendMessageRequest(message=pb.Message(
        message_id="m", parts=[pb.Part(text="go on")])),
        CallContext(facts, "1.0", tenant="shop"), dialect=JSONRPC_V10)
    return await chosen_by(m, call, streaming)


async def test_a_resumed_stream_goes_to_the_owner_of_its_task() -> None:
    assert ticket(await chosen(tenant("cutover", True), ops.STREAM, True)).arm == "candidate"
    # (cutover: a new conversation would go to the candidate anyway; shadow: never)
    assert ticket(await chosen(tenant("shadow", True), ops.STREAM, True)).arm == "candidate"


async def test_the_header_is_ignored_on_a_unary_call_and_with_the_journal_off() -> None:
    assert ticket(await chosen(tenant("shadow", True), ops.SEND, False)).arm == "primary"
    assert ticket(await chosen(tenant("shadow", False), ops.STREAM, True)).arm == "primary"


async def test_a_resumed_stream_of_the_primarys_is_not_copied() -> None:
    m = tenant("shadow", True)
    m.owners.remember(owner_key("shop", "task", "t-candidate"), "primary")
    assert not ticket(await chosen(m, ops.STREAM, True)).shadowed
    new = tenant("shadow", False)  # the journal off: a new message, copied
    new.owners.remember(owner_key("shop", "task", "t-candidate"), "primary")
    assert ticket(await chosen(new, ops.STREAM, True)).shadowed
