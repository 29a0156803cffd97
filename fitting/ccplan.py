"""The plan of a Claude Code session from the fold of its lines (``ccfold``), without loading it: ``check``'s
(fitting or not) and ``fit``'s without ``-o`` or ``--store`` (its diff and ``--json``).

Where the fold vouches for a session (the one pass, ``_fold_lines``, or where it gives up the tree fold,
``_fold_tree``: branches, broken links, lines skipped with ``--skip-invalid``, unanswered calls and orphan
results), the loader would give a transcript with no system prompt, no tools and no compaction. ``fold_plan``
runs ``fit._plan`` itself on a skeleton of that transcript: one ``Message`` per message with its role, line,
calls (id and name) and results (id, first in their message as the loader puts them), each result's content and
the rest of the message stand-ins (``_Chars``) of the characters per class, fixed tokens and floor the fold
counted. The skeleton's estimator (``_Counted``) counts a stand-in as what it carries, so each message, each
result and each message with some results stubbed estimate as the loaded ones; the floors an anchored fit removes
are the fold's (counted per block by the scanner). ``repair`` runs on the skeleton as on the loaded messages:
the repairs the tree fold lets through (a synthetic result for an unanswered call, an orphan result dropped)
change only whole results, which the skeleton holds apart, so the repaired messages estimate and floor as the
loaded ones too (a call's input is lumped into the rest of its message, which no repair splits; a call id used
twice or a result written twice, the other repairs, the tree fold leaves to the loader). The plan is then
``plan_fit``'s of the loaded transcript, field for field, and the skeleton holds what the diff, ``--json`` and
``check_request`` read of it (tests/test_fitfold.py compares them on the corpus, its prefixes and generated
sessions; tests/test_ccplan.py compares check's output). ``fold_plans`` plans each transcript of a file with
sidechains beside its main chain, as ``check`` checks each. The notice (it changes the system prompt) and a
store's pages (handles of the results' content) are left to the loader: ``fold_plan`` returns None for them, as
for a shape the fold refuses, and the caller loads the file.

Check reads only the plan, so with ``summary`` a session that repair leaves as it is (no carried cut) gets no
skeleton: ``fit._decide`` plans it on the fold's lists (``_FoldShape``, a ``fit._Shape``: the results, floors,
stage 1's arithmetic, turns and rounds of the skeleton, read without making a message) and gives the same plan,
field for field (tests/test_fitfold.py compares it with the loaded one, tests/test_ccplan.py each read with the
skeleton's).

``fits_plan`` is the earlier, narrower path: check's summary plan of a session that fits, from the fold's report
alone (for a session that fits, ``fit._plan`` returns ``fits`` at once, with ``tokens_before`` the predicted
size). When the last measured request the file's tail records is over the budget already, it returns None
without folding (``last_measured``)."""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from ._frozen import frozen
from .ccfold import (
    _fold_source,
    _Folded,
    _refused_options,
    _size,
    fold_claude_code,
    subagent_name,
)
from .estimate import CharCounts, Estimator, MessageEstimate, ScriptRule
from .fit import FitOptions, Plan, ResultRef, _decide, _plan, _script_stub, _Sizer, _StubParts, stub_text
from .formats.base import Input
from .formats.claude_code import NAME, assistant_messages_from_end, subagent_files
from .repair import DEFECT_OF, repair
from .size import FLOOR_RULE, Size, SizeMode, floor_tokens
from .transcript import (
    Block,
    Message,
    Round,
    Single,
    Source,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    Transcript,
    Unit,
    Usage,
)
from .validate import check_messages

TAIL_BYTES = 256 * 1024
"""How much of a file's end is read for its last measured request (``last_measured``)."""


@frozen
class FoldedFit:
    """A session ``fits_plan`` vouches for: where it is, its name, and check's summary of its plan."""

    path: str
    name: str
    plan: Plan
    messages: int | None = None
    """How many messages the session has (the fold's ``Report.messages``), for a row of it
    (``fitting.rows``); None where the maker of the plan does not say (the row is then made from the load)."""


def fits_plan(
    source: Input,
    estimator: Estimator,
    options: FitOptions,
    *,
    size_mode: SizeMode = "auto",
    preamble: int | None = None,
) -> FoldedFit | None:
    """The summary of ``fit._plan``'s plan of the one transcript ``claude_code.load`` reads from ``source`` (its
    size predicted with ``size_mode`` and ``preamble``), when the fold vouches for the file and the session fits
    ``options.budget``; None otherwise (see the module docstring)."""
    if options.add_notice or options.carried_cut is not None:
        return None  # the notice changes the request; a carried cut is checked against the messages
    if size_mode == "auto":
        measured = last_measured(source)
        if measured is not None and measured > options.budget:
            return None  # over the budget already: the fold would be read for nothing
    report = fold_claude_code(source, estimator, top=0, size_mode=size_mode, preamble=preamble)
    if report is None or report.size is None or report.defects:
        return None  # a defect (the fold reads branches and broken lines too): repair may change the request
    size = report.size
    # fit._plan with est.preamble(...) == 0 (no system prompt, no tools) and no notice or repairs.
    pre = size.preamble_tokens if size.preamble_source in ("inferred", "given") else 0
    before = size.tokens if size.anchored else pre + size.estimated_tokens
    if before > options.budget:
        return None
    return FoldedFit(report.path, report.name, _fits(options, before, pre, size), report.messages)


def last_measured(source: Input) -> int | None:
    """The input tokens (cache writes and reads included) of the last assistant line with usage in the last
    ``TAIL_BYTES`` of ``source``, or None when that tail has none or cannot be read. A hint, not a size: the
    line may be off the chain, or the file damaged; only ``fits_plan``'s choice to fold rests on it."""
    try:
        if source.data is not None:
            tail = source.data[-TAIL_BYTES:]
            whole = len(source.data) <= TAIL_BYTES
        else:
            with source.open() as f:
                end = f.seek(0, 2)
                start = max(0, end - TAIL_BYTES)
                f.seek(start)
                tail = f.read()
                whole = start == 0
    except OSError:
        return None
    floor = 0 if whole else tail.find(b"\n") + 1  # before it, the end of a line cut in two
    for message in assistant_messages_from_end(tail, b'"usage"', floor):
        usage = message.get("usage")
        if type(usage) is not dict:
            continue
        total = 0
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            n = usage.get(key)
            if type(n) is int:
                total += n
        return total
    return None


# ------------------------------------------------------------------------------------------------------------
# fit and check of a session over its budget: the plan of a skeleton of the fold


@frozen
class _Chars(Text):
    """A stand-in for text the fold counted but did not keep: its characters per class and fixed tokens. Only
    ``_Counted`` reads them; to anything else it is an empty text."""

    a: int = 0
    c: int = 0
    o: int = 0
    fixed: int = 0
    floor: int = 0
    """Its floor (``size.floor_tokens`` under ``FLOOR_RULE``): a result's content's, or the rest of a message's
    (its floor less its results' and its calls' as the skeleton holds them, ``_floors_of``)."""


@dataclass(slots=True)
class _Counted(Estimator):
    """The estimator of a skeleton: a ``_Chars`` counts as the characters and fixed tokens it carries, every
    other block as ``Estimator`` counts it (a stub, the note, a call's name). The skeleton's own messages
    come with their estimates (``known``, by identity: no message is hashed), as ``_script_blocks`` makes them
    of those blocks: each message's tokens, counts (characters per class and fixed tokens) and each block's
    tokens, made into a ``MessageEstimate`` when it is asked for (``result_refs`` asks for the messages with
    results only)."""

    known: dict[int, tuple[Message, int, tuple[int, int, int, int], tuple[int, ...]]] = field(default_factory=dict)
    whole: tuple[tuple[Message, ...], tuple[int, ...]] | None = None
    """The skeleton's messages and their tokens (``message_tokens`` of them)."""

    def block_parts(self, block: Block) -> tuple[CharCounts, int]:
        if type(block) is _Chars:
            return CharCounts(block.a, block.c, block.o), block.fixed
        return Estimator.block_parts(self, block)

    def message(self, message: Message) -> MessageEstimate:
        hit = self.known.get(id(message))
        if hit is not None and hit[0] is message:
            _, tokens, counts, each = hit
            return MessageEstimate(tokens, CharCounts(counts[0], counts[1], counts[2]), counts[3], each)
        return Estimator.message(self, message)

    def message_tokens(self, messages: tuple[Message, ...]) -> tuple[int, ...]:
        if self.whole is not None and messages is self.whole[0]:
            return self.whole[1]
        # The skeleton as repaired: its own messages by identity, only those repair changed estimated (a
        # skeleton's message hashes every stand-in of it, for the memo).
        known = self.known
        tokens = []
        for m in messages:
            hit = known.get(id(m))
            tokens.append(hit[1] if hit is not None and hit[0] is m else Estimator.message(self, m).tokens)
        return tuple(tokens)


@frozen
class FoldedPlan:
    """A session ``fold_plan`` planned: its skeleton (one message per message of the loaded transcript, with
    its role, line, calls and results, and stand-ins for the rest: what ``render_plan``, ``plan_document``
    and ``check_request`` read of it) and the plan, the one ``plan_fit`` makes of the loaded transcript."""

    path: str
    name: str
    plan: Plan
    skeleton: Transcript | None
    """None for check's summary (``summary``) of a session ``repair`` leaves as it is: where it fits, its plan
    has no detail to show; else the plan is decided on the fold's lists (``_FoldShape``), which check reads no
    message of."""
    messages: int = 0
    """How many messages the loaded transcript has (a row of it, ``fitting.rows``)."""


def fold_plan(
    source: Input,
    estimator: Estimator,
    options: FitOptions,
    *,
    size_mode: SizeMode = "auto",
    preamble: int | None = None,
    summary: bool = False,
    skip_invalid: bool = False,
) -> FoldedPlan | None:
    """``fit._plan``'s plan of the one transcript ``claude_code.load`` reads from ``source`` (with
    ``skip_invalid`` as given to it; its size predicted with ``size_mode`` and ``preamble``, as ``fit`` and
    ``check`` predict it) made from the fold of its lines, fitting or not: the one pass's, else the tree fold's
    (``ccfold._fold_tree``: branches, broken links, skipped lines, defective rounds, which ``repair`` fixes on
    the skeleton as on the loaded messages). None where the fold leaves the file to the loader, for a file of
    several transcripts (sidechains beside the main chain: ``fold_plans``), or for options it does not plan
    for (the notice, a store's pages). With ``summary`` (check), no session that repair leaves as it is is given a
    skeleton (``FoldedPlan.skeleton``)."""
    found = _folds(source, estimator, options, size_mode, preamble, skip_invalid, summary)
    if found is None or len(found) != 1:
        return None  # left to the loader, or several transcripts (fit picks one, with a note)
    return _plan_of(source, found[0], estimator, options, size_mode, preamble, summary)


def fold_plans(
    source: Input,
    estimator: Estimator,
    options: FitOptions,
    *,
    size_mode: SizeMode = "auto",
    preamble: int | None = None,
    summary: bool = False,
    skip_invalid: bool = False,
) -> list[FoldedPlan] | None:
    """``fold_plan`` of every transcript ``claude_code.load`` reads from ``source``, in its order: the main
    conversation, then each tree of sidechain lines beside it (what ``check`` plans, one line each); None
    where the fold leaves any of them to the loader (a subagents folder beside the file among them)."""
    found = _folds(source, estimator, options, size_mode, preamble, skip_invalid, summary)
    if found is None:
        return None
    plans = []
    for folded in found:
        plan = _plan_of(source, folded, estimator, options, size_mode, preamble, summary)
        if plan is None:
            return None
        plans.append(plan)
    return plans


def _folds(
    source: Input,
    estimator: Estimator,
    options: FitOptions,
    size_mode: SizeMode,
    preamble: int | None,
    skip_invalid: bool,
    summary: bool,
) -> list[_Folded] | None:
    """The folds of the transcripts of ``source`` with what the plans read (the one pass's, else the tree
    fold's: with ``summary``, each message's stand-in for ``_repaired``), or None where the fold or the plans
    leave the file to the loader."""
    rule = estimator.rule
    if options.add_notice or options.page_tokens is not None:
        return None  # the notice changes the system prompt; a store's handles are of the results' content
    if type(rule) is not ScriptRule or _refused_options(estimator, source, size_mode, preamble) is not None:
        return None  # as report's fold refuses them (predict_size words the errors of its options)
    if source.data is None and subagent_files(source.path):
        return None
    return _fold_source(source, rule, skip_invalid, plan=True, stand_ins=summary)


def _plan_of(
    source: Input,
    folded: _Folded,
    estimator: Estimator,
    options: FitOptions,
    size_mode: SizeMode,
    preamble: int | None,
    summary: bool,
) -> FoldedPlan | None:
    """``fold_plan``'s plan of one transcript's fold."""
    rule = estimator.rule
    assert type(rule) is ScriptRule
    size = _size(folded.usage, folded.tokens, folded.roles, size_mode, preamble)
    name = folded.name if folded.name is not None else subagent_name(source.path, folded.agent)
    repaired: bool | None = None  # whether repair changes the request (then it is not the file's): where asked
    if summary and options.carried_cut is None:
        repaired = _repaired(folded)
        if not repaired:  # check reads no skeleton
            return FoldedPlan(
                source.path, name, _unrepaired(folded, estimator, options, size, summary), None, len(folded.tokens)
            )
    est = _Counted(rule)
    skeleton = _skeleton(source.path, name, folded, est)
    if repaired is None and options.carried_cut is None and (folded.one_pass or repair(skeleton)[0] is skeleton):
        # fit's plan of a session repair leaves as it is (the one pass vouches for its own): the skeleton is what
        # fit shows and writes from, and deciding on it took twice the time
        return FoldedPlan(
            source.path, name, _unrepaired(folded, estimator, options, size, False), skeleton, len(folded.tokens)
        )
    plan = _plan(skeleton, options, est, size, lambda ms: est.message_tokens(tuple(ms)), _floors_for(skeleton, folded))
    if repaired is not None and bool(plan.repairs) is not repaired:
        raise AssertionError("a skeleton of the fold planned unlike the file")  # a bug, not bad input
    if plan.repairs and not rule.block_overhead_tokens:
        # Blocks of no tokens (an empty text with --overhead 0) leave no stand-in: whether a message repair
        # empties of its results holds other blocks, which the loader then keeps, is not known.
        return None
    return FoldedPlan(source.path, name, plan, skeleton, len(folded.tokens))


def _unrepaired(folded: _Folded, estimator: Estimator, options: FitOptions, size: Size, summary: bool) -> Plan:
    """``fit._plan``'s plan of the transcript of ``folded``, which ``repair`` leaves as it is and which has no
    system prompt or tools (``est.preamble(...) == 0``), no notice and no carried cut: decided on the fold's lists
    (``_FoldShape``); with ``summary``, a session that fits gets check's summary plan (``_fits``)."""
    rule = estimator.rule
    assert type(rule) is ScriptRule
    pre = size.preamble_tokens if size.preamble_source in ("inferred", "given") else 0
    before = size.tokens if size.anchored else pre + size.estimated_tokens
    if summary and before <= options.budget:
        return _fits(options, before, pre, size)
    return _decide(_FoldShape.of(folded, rule), options, estimator, size, tuple(folded.tokens), pre, before)


def _floors_for(
    skeleton: Transcript, folded: _Folded
) -> Callable[[Sequence[Message], dict[tuple[int, int], int]], Sequence[int]]:
    """``_plan``'s ``floors_of`` of the skeleton of ``folded``: ``fit._floors`` of the skeleton, the fold's
    floors; of the skeleton as repaired, its blocks' (``_floors_of``)."""

    def floors_of(messages: Sequence[Message], result_floors: dict[tuple[int, int], int]) -> Sequence[int]:
        if messages is not skeleton.messages:
            return _floors_of(messages, result_floors, skeleton.messages, folded.floors)
        _result_floors(folded, result_floors)
        return folded.floors

    return floors_of


def _result_floors(folded: _Folded, result_floors: dict[tuple[int, int], int]) -> None:
    """Each result's floor (the fold's) into ``result_floors``, by its message's index and its place among that
    message's results (its block's index: they come first)."""
    last, at = -1, 0
    for result, part in zip(folded.results, folded.parts, strict=True):
        index = result[3]
        at = at + 1 if index == last else 0
        last = index
        result_floors[(index, at)] = part[4]


@frozen
class _FoldShape:
    """``fit._Shape`` of the transcript of a fold (with ``plan``) that ``repair`` leaves as it is, read from the
    fold's lists without making a message: what ``_Messages`` reads of its skeleton (``_skeleton``, under
    ``_Counted``), the same values (tests/test_ccplan.py compares each read). The results are each message's
    first blocks, in the fold's order (``_Folded.results``); a result's tool is its call's (a result without its
    call is an orphan, which repair drops: not here); each message's characters and fixed tokens are the fold's
    (``_Folded.chars``), which its blocks' in the skeleton sum to."""

    folded: _Folded
    rule: ScriptRule
    at: array[int]
    """Each result's message index (ascending, as ``folded.results``)."""

    @classmethod
    def of(cls, folded: _Folded, rule: ScriptRule) -> _FoldShape:
        return cls(folded, rule, array("q", [result[3] for result in folded.results]))

    def __len__(self) -> int:
        return len(self.folded.tokens)

    def result_refs(self, est: Estimator, page_tokens: int | None) -> tuple[tuple[ResultRef, ...], list[_StubParts]]:
        if page_tokens is not None:
            raise ValueError("a fold's shape has no results' content to keep in a store")
        names, rule = self.folded.names, self.rule
        refs = []
        stubs = []
        last, bi = -1, 0
        # A stub's characters per class and UTF-8 bytes are its tool's, its call id's and its size's, formatted
        # with commas: an ASCII call id counts as its length, the size as its digits (its stub is counted once).
        made: dict[tuple[str, int | str, int], tuple[int, _StubParts]] = {}
        for call_id, _, tokens, mi, _ in self.folded.results:
            bi = bi + 1 if mi == last else 0
            last = mi
            tool = names.get(call_id, "")
            shape = (tool, len(call_id) if call_id.isascii() else call_id, len(str(tokens)))
            found = made.get(shape)
            if found is None:
                found = made[shape] = _script_stub(rule, stub_text(tool, call_id, tokens))
            stub, parts = found
            refs.append(ResultRef(mi, bi, call_id, tool, tokens, stub))
            stubs.append(parts)
        return tuple(refs), stubs

    def sizer(
        self, estimates: Sequence[int], floor: Estimator | None, result_floors: dict[tuple[int, int], int]
    ) -> _Sizer:
        if floor is None:
            return _Sizer(estimates, None)
        folded = self.folded
        _result_floors(folded, result_floors)
        return _Sizer(folded.floors, ((u[0], u[1] + u[2] + u[3]) for u in folded.usage))

    def stubbing(self, est: Estimator) -> _FoldStubbing:
        return _FoldStubbing(self)

    def head(self) -> tuple[int, int]:
        if not len(self):
            return (0, 0)
        first = next(self._units(0, len(self)))
        return (0, first.stop if isinstance(first, Round) else 1)

    def turn_bounds(self) -> array[int]:
        roles = self.folded.roles
        n = len(roles)
        bounds = array("q")
        if not n:
            return bounds
        answering = set(self.at)  # a user message with results answers calls: no turn starts there
        starts = [i for i, role in enumerate(roles) if role == "user" and i not in answering]
        if not starts or starts[0]:
            bounds.append(0)
        bounds.extend(starts)
        bounds.append(n)
        return bounds

    def units(self, start: int, stop: int) -> tuple[Unit, ...]:
        return tuple(self._units(start, stop))

    def _units(self, start: int, stop: int) -> Iterator[Unit]:
        """``iter_units`` of messages ``[start, stop)``."""
        folded, at = self.folded, self.at
        roles, calls_of, results = folded.roles, folded.calls_of, folded.results
        i = start
        while i < stop:
            calls = calls_of[i] if roles[i] != "user" else ()  # the skeleton's roles: user, else assistant
            if not calls:
                yield Single(i)
                i += 1
                continue
            pending = set(calls)
            j = i + 1
            while j < stop and pending:
                lo = bisect_left(at, j)
                answered = {results[k][0] for k in range(lo, bisect_right(at, j, lo))}
                if not answered or roles[j] != "user":
                    break
                pending -= answered
                j += 1
            yield Round(i, j, tuple(calls))
            i = j


@dataclass(slots=True)
class _FoldStubbing:
    """``fit._Stubbing`` of a ``_FoldShape``: a message's characters and fixed tokens as the fold counted them,
    with each cleared result's parts (``_Folded.parts``) taken off and its stub's added. The results cleared are
    only noted until a message's estimate is asked for: an anchored fit that stage 1 fits (most of check's over
    the budget) asks for none."""

    shape: _FoldShape
    pending: list[tuple[ResultRef, _StubParts]] = field(default_factory=list)
    """The results cleared since an estimate was last asked for, and their stubs."""
    changed: dict[int, list[int]] = field(default_factory=dict)
    """By message index: what its stubs add to its ascii, CJK and other characters and fixed tokens."""

    def clear(self, ref: ResultRef, stub: _StubParts) -> None:
        self.pending.append((ref, stub))

    def _count(self) -> None:
        """Count the results cleared so far into ``changed``."""
        parts, at, changed = self.shape.folded.parts, self.shape.at, self.changed
        for ref, stub in self.pending:
            mi = ref.message_index
            ra, rc, ro, rf, _ = parts[bisect_left(at, mi) + ref.block_index]
            assert stub.script is not None
            sa, sc, so, sf = stub.script
            delta = changed.get(mi)
            if delta is None:
                delta = changed[mi] = [0, 0, 0, 0]
            delta[0] += sa - ra
            delta[1] += sc - rc
            delta[2] += so - ro
            delta[3] += sf - rf
        self.pending.clear()

    def tokens(self, mi: int) -> int:
        if self.pending:
            self._count()
        wa, wc, wo, denominator = self.shape.rule._weights
        a, c, o, fixed = self.shape.folded.chars[mi]
        da, dc, do, df = self.changed[mi]
        a, c, o = a + da, c + dc, o + do
        return -(-(a * wa + c * wc + o * wo) // denominator) + fixed + df

    @property
    def touched(self) -> list[int]:
        if self.pending:
            self._count()
        return sorted(self.changed)


def _floors_of(
    messages: Sequence[Message],
    result_floors: dict[tuple[int, int], int],
    skeleton: Sequence[Message] = (),
    floors: Sequence[int] = (),
) -> list[int]:
    """``fit._floors`` of the skeleton's messages as ``repair`` changed them (results dropped, synthetic results
    added): a stand-in counts the floor it carries (``_Chars.floor``), every other block as ``_floors`` counts it
    (a synthetic result's text, a call's name and its "{}" input, whose characters the rest's floor leaves out).
    A message of ``skeleton`` that repair left as it was (the same object) has its floor in ``floors`` (the
    fold's: ``_skeleton`` splits it over the message's blocks, which sum to it) and its results first, each
    holding one stand-in."""
    floor = Estimator(FLOOR_RULE)
    each = []
    at = {id(m): k for k, m in enumerate(skeleton)}
    for mi, message in enumerate(messages):
        k = at.get(id(message))
        if k is not None and skeleton[k] is message:
            for bi, block in enumerate(message.content):
                if type(block) is not ToolResult:
                    break
                stand_in = block.content[0]
                assert type(stand_in) is _Chars
                result_floors[(mi, bi)] = stand_in.floor
            each.append(floors[k])
            continue
        total = 0
        for bi, block in enumerate(message.content):
            if type(block) is _Chars:
                total += block.floor
            elif isinstance(block, ToolResult):
                inner = block.content
                found = inner[0].floor if len(inner) == 1 and type(inner[0]) is _Chars else floor_tokens(inner, floor)
                result_floors[(mi, bi)] = found
                total += found
            elif isinstance(block, (Text, Thinking, ToolCall)):
                total += floor.block(block)
        each.append(total)
    return each


_REPAIRED = frozenset(DEFECT_OF.values())
"""The defects ``repair`` fixes."""


def _repaired(folded: _Folded) -> bool:
    """Whether ``repair`` changes the transcript of ``folded`` (a fold with ``plan``): the one pass vouches it
    does not (it keeps no stand-ins); for the tree fold's, whether ``check_messages`` finds a violation ``repair``
    fixes in the stand-ins of its messages (the fold refuses the call ids used twice and second results, which
    ``repair`` would also change) as ``claude_code.message_defects`` finds them for the loaded transcript."""
    stand_ins = folded.skeleton
    return stand_ins is not None and any(v.kind in _REPAIRED for v in check_messages(stand_ins, "anthropic"))


def _fits(options: FitOptions, before: int, preamble: int, size: Size) -> Plan:
    """``fit._plan``'s plan of a session that fits, without the detail check leaves out (``summary_plan``)."""
    return Plan(
        options=options,
        outcome="fits",
        tokens_before=before,
        tokens_after=before,
        stages=(),
        message_tokens=(),
        preamble_tokens=preamble,
        results=(),
        protected=(),
        too_small=(),
        candidates=(),
        batches=(),
        size=size,
    )


def _skeleton(path: str, name: str, folded: _Folded, est: _Counted) -> Transcript:
    """The transcript ``claude_code.load`` reads, with each message's role, line, calls (their ids and names)
    and results (their ids, in order, first in their message as the loader puts them), each result's content a
    ``_Chars`` of its own counts and the rest of the message one ``_Chars`` (what it holds beyond its results
    and its calls' names): ``_Counted`` estimates each message, and each result, as the loaded one (its floors
    are the fold's, ``fold_plan``'s ``floors_of``). Each message's estimate goes into ``est.known``, the tokens
    into ``est.whole``."""
    rule = est.rule
    assert type(rule) is ScriptRule
    wa, wc, wo, denominator = rule._weights
    known = est.known
    names = folded.names
    results_of: dict[int, list[int]] = {}
    for k, result in enumerate(folded.results):
        results_of.setdefault(result[3], []).append(k)
    overhead = rule.message_overhead_tokens
    messages = []
    bo = rule.block_overhead_tokens
    by_name: dict[str, tuple[int, int, int, int, int, int]] = {}
    floors = Estimator(FLOOR_RULE)
    parts, results = folded.parts, folded.results
    chars, result_of, call_of, message_of = _Chars, ToolResult, ToolCall, Message
    none: tuple[int, ...] = ()
    # Positional constructors (frozen dataclasses: keywords cost more); ``_Chars``'s first three are ``Text``'s.
    for i, (role, line, counts, calls, tokens, message_floor) in enumerate(
        zip(folded.roles, folded.lines, folded.chars, folded.calls_of, folded.tokens, folded.floors, strict=True)
    ):
        a, c, o, fixed = counts
        rest_floor = message_floor
        blocks: list[Block] = []
        each: list[int] = []
        fixed -= overhead
        for k in results_of.get(i, none):
            ra, rc, ro, rf, result_floor = parts[k]
            result = results[k]
            blocks.append(result_of(result[0], (chars("", "", "", ra, rc, ro, rf - bo, result_floor),)))
            each.append(result[2])
            a, c, o, fixed, rest_floor = a - ra, c - rc, o - ro, fixed - rf, rest_floor - result_floor
        for call_id in calls:
            tool = names[call_id]
            counted = by_name.get(tool)
            if counted is None:  # a call's counts are its name's (and its input's, "{}" here)
                call = call_of(call_id, tool, "{}")
                ca, cc, co, cf = est._script_parts(rule, call)
                call_tokens = -(-(ca * wa + cc * wc + co * wo) // denominator) + cf
                counted = by_name[tool] = (ca, cc, co, cf, call_tokens, floors.block(call))
            ca, cc, co, cf, call_tokens, call_floor = counted
            blocks.append(call_of(call_id, tool, "{}"))
            each.append(call_tokens)
            a, c, o, fixed, rest_floor = a - ca, c - cc, o - co, fixed - cf, rest_floor - call_floor
        if a or c or o or fixed or rest_floor or not blocks:
            blocks.append(chars("", "", "", a, c, o, fixed, rest_floor))
            each.append(-(-(a * wa + c * wc + o * wo) // denominator) + fixed)
        m = message_of("user" if role == "user" else "assistant", tuple(blocks), Source(path, line))
        messages.append(m)
        known[id(m)] = (m, tokens, counts, tuple(each))
    usage = tuple(Usage(u[0], u[1], u[2], u[3], Source(path, u[4]), u[5]) for u in folded.usage)
    whole = tuple(messages)
    est.whole = (whole, tuple(folded.tokens))
    return Transcript(
        system=(),
        tools=(),
        messages=whole,
        source=Source(path),
        format=NAME,
        dialect="anthropic",
        usage=usage,
        name=name,
    )
