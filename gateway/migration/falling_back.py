"""A new conversation sent to the candidate, which goes to the primary instead when the
candidate's connection cannot even be opened (nothing was sent, so nothing is sent twice).
Unary calls only, and streams whose first read fails so while both agents speak one
version (a stream's repairs are chosen by its backend's version before it opens). A push
config the call carries was made for the candidate's version by the push relay: it is
made again for the primary's (``retarget``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from google.protobuf.message import Message as ProtoMessage

from gateway.call import Call
from gateway.egress.base import Backend, BackendGone, EventBatches
from gateway.streams.events import close_stream
from translators.dialects.base import WireAnswer
from translators.dialects.contract import Dialect

Retarget = Callable[[Call], Awaitable[None]]  # gateway/relay/hooks.py PushRelay.rewrite_again


def _unsent(err: BackendGone) -> bool:
    return not err.sent


# Reads an agent's card (TenantRoute.card_json): what a call is checked against.
CardReader = Callable[[], Awaitable[dict[str, Any] | None]]


class FallingBack:
    """One call's backend (one new conversation). Once the candidate was reached, or the
    call went to the primary, that agent is the call's for good: what the stream's
    repairs send later (a re-attach after a broken connection, the GetTask that settles
    its end) goes to the agent that took the conversation, never falls back again."""

    def __init__(self, candidate: Backend, primary: Backend,
                 switched: Callable[[], None], retarget: Retarget | None = None,
                 primary_headers: Mapping[str, str] | None = None,
                 primary_card: CardReader | None = None) -> None:
        """``switched``: told when the call goes to the primary instead; ``retarget``:
        makes the call's push config again for the primary; ``primary_headers``: the
        headers the primary gets (the candidate got them without the gateway's
        credential for the primary); ``primary_card``: reads the primary's card, which
        the call is checked against instead of the candidate's (its precheck)."""
        self.candidate = candidate
        self.primary = primary
        self._primary_headers = primary_headers
        self._primary_card = primary_card
        self.config = candidate.config
        self._switched = switched
        self._retarget = retarget
        self._taken: Backend | None = None  # the agent the conversation went to

    @property
    def dialect(self) -> Dialect:
        return self.candidate.dialect

    async def _switch(self, call: Call) -> Backend:
        self._taken = self.primary
        self._switched()
        if self._primary_headers is not None:
            call.ctx.backend_headers = self._primary_headers
        # Checked and translated for the primary: not against the candidate's card, and
        # what decoding dropped counts (a call passed through the candidate's dialect
        # reaches the primary translated: the loss policy and report apply).
        call.backend_card = await self._primary_card() if self._primary_card else None
        call.ctx.loss.translated()
        outcome = call.ctx.outcome
        outcome.forwarded = False
        outcome.backend_version = self.primary.config.version
        outcome.backend_binding = self.primary.config.binding
        call.ctx.loss.next_attempt()
        if self._retarget is not None:
            await self._retarget(call)
        return self.primary

    def _reached(self, err: BaseException) -> bool:
        """Whether the candidate got the call (it failed otherwise than unsent): it is
        the conversation's agent then."""
        if isinstance(err, BackendGone) and _unsent(err):
            return False
        self._taken = self.candidate
        return True

    async def unary(self, call: Call) -> ProtoMessage | None:
        if self._taken is not None:
            return await self._taken.unary(call)
        try:
            answer = await self.candidate.unary(call)
        except Exception as err:
            if self._reached(err):
                raise
            return await (await self._switch(call)).unary(call)
        self._taken = self.candidate
        return answer

    async def forward(self, call: Call) -> WireAnswer | ProtoMessage | None:
        if self._taken is self.primary:
            return await self.primary.unary(call)
        if self._taken is not None:
            return await self.candidate.forward(call)
        try:
            answer = await self.candidate.forward(call)
        except Exception as err:
            if self._reached(err):
                raise
            # The client's bytes were for the candidate's dialect: the primary gets the
            # call translated from its canonical request.
            return await (await self._switch(call)).unary(call)
        self._taken = self.candidate
        return answer

    def stream(self, call: Call) -> EventBatches:
        if self._taken is not None:
            return self._taken.stream(call)
        if self.primary.config.version != self.candidate.config.version:
            self._taken = self.candidate  # no fallback for a stream between versions
            return self.candidate.stream(call)
        return self._stream(call)

    async def _stream(self, call: Call) -> EventBatches:
        reads = self.candidate.stream(call)
        try:
            try:
                first = await anext(reads, None)
            except Exception as err:
                if self._reached(err):
                    raise
                reads = (await self._switch(call)).stream(call)
                first = await anext(reads, None)
            else:
                self._taken = self.candidate
            if first is None:
                return
            yield first
            async for batch in reads:
                yield batch
        finally:  # closed when this is (the client gone, a drain), not by the collector
            await close_stream(reads)

    async def close(self) -> None:
        """Nothing of its own: the candidate and the primary are their routes'."""
