"""The rich diff of a fit: summary, clearing batches, dropped turns and
rounds, the protected tail, and (``--diff full``) the request itself."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from windowfit.fitting.fit import Dropped, Plan, clear_results, repaired, too_long_message
from windowfit.fitting.transcript import Image, Message, Other, Thinking, ToolCall, ToolResult, Transcript
from windowfit.fitting.transcript import Text as TextBlock

from .tables import WholeTable
from .terminal import markup_safe

OUTCOME_STYLE = {
    "fits": "green",
    "cleared": "cyan",
    "turns-dropped": "yellow",
    "rounds-dropped": "yellow",
    "too-long": "bold red",
}
STAGE_NAMES = {1: "clear old tool results", 2: "keep whole turns", 3: "keep whole tool rounds"}


def _line(transcript: Transcript, index: int) -> str:
    line = transcript.messages[index].source.line
    return "" if line is None else str(line)


def render_summary(plan: Plan, transcript: Transcript) -> RenderableType:
    o = plan.options
    head = Text.assemble(
        (markup_safe(transcript.source.path), "bold"),
        "  ",
        (plan.outcome, OUTCOME_STYLE[plan.outcome]),
    )
    change = plan.tokens_after - plan.tokens_before
    numbers = Text(
        f"{plan.tokens_before:,} → {plan.tokens_after:,} tokens ({change:+,}) · budget {o.budget:,} · "
        f"batch size {o.batch_size}"
    )
    stages = Text(
        "stages: " + (", ".join(f"{s} ({STAGE_NAMES[s]})" for s in plan.stages) if plan.stages else "none needed")
    )
    parts: list[RenderableType] = [head, numbers, stages]
    if o.batch_tokens is not None or o.cut_step is not None:
        parts.append(Text(_step_rules(plan, transcript)))
    if o.carried_cut is not None:
        line = _line(repaired(transcript, plan), o.carried_cut)
        where = f"message {o.carried_cut}" + (f" (line {line})" if line else "")
        moved = "" if plan.cut in (None, o.carried_cut) else f"; it moved forward to message {plan.cut}"
        parts.append(Text(f"carried cut: {where}, an earlier request's: the messages before it stay out{moved}"))
    size = plan.size
    if size is not None and size.anchored:
        parts.append(
            Text(
                f"size anchored on measured usage: {size.describe()}; what the fit removes is counted "
                "from below, so the size after it is an upper bound",
                style="dim",
            )
        )
    if size is not None and size.preamble_source in ("inferred", "given"):
        parts.append(Text(size.preamble_text(), style="dim"))
    if plan.notice_added:
        parts.append(Text("added the context-management notice to the system prompt", style="dim"))
    return Group(*parts)


def _step_rules(plan: Plan, transcript: Transcript) -> str:
    """The step rules (SPEC section 3) and, for a cut, the step position it is at."""
    o = plan.options
    rules = []
    if o.batch_tokens is not None:
        rules.append(f"batches close at {o.batch_tokens:,} tokens" + ("" if o.batch_size else " (no count limit)"))
    if o.cut_step is not None:
        rule = f"cuts at steps of {o.cut_step:,} tokens"
        if plan.cut_at is not None:
            line = _line(repaired(transcript, plan), plan.cut_at)
            rule += f": this one at message {plan.cut_at}" + (f" (line {line})" if line else "")
        elif plan.outcome in ("turns-dropped", "rounds-dropped"):
            rule += ": no step position could be used, so at the earliest turn or round that fits"
        rules.append(rule)
    return "step rules: " + "; ".join(rules)


def _plural(n: int, noun: str) -> str:
    """``1 batch``, ``2 batches``, ``1 tool result``, ``4 tool results``."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}{'es' if noun.endswith('ch') else 's'}"


MAX_BATCHES_SHOWN = 6


def render_batches(plan: Plan, transcript: Transcript, *, full: bool = False) -> RenderableType | None:
    if not plan.batches:
        return None
    table = WholeTable(
        title=f"Cleared {_plural(len(plan.cleared), 'tool result')} in {_plural(len(plan.batches), 'batch')} "
        "(oldest first)",
        title_justify="left",
        show_edge=False,
    )
    for col in ("batch", "msg", "line", "tool", "call id", "tokens"):
        table.add_column(col, justify="right" if col in ("batch", "msg", "line") else "left")
    shown = plan.batches
    hidden = 0
    if not full and len(shown) > MAX_BATCHES_SHOWN:
        half = MAX_BATCHES_SHOWN // 2
        hidden = len(shown) - MAX_BATCHES_SHOWN
        shown = shown[:half] + shown[-half:]
    for batch in shown:
        if hidden and batch is shown[MAX_BATCHES_SHOWN // 2]:
            table.add_row(
                "…",
                "",
                "",
                "",
                Text(f"{hidden} more batch{'es' if hidden > 1 else ''} (--diff full shows all)", style="dim"),
                "",
                end_section=True,
            )
        for k, ref in enumerate(batch.results):
            table.add_row(
                f"{batch.index + 1}" if k == 0 else "",
                str(ref.message_index),
                _line(transcript, ref.message_index),
                markup_safe(ref.tool),
                markup_safe(ref.call_id),
                f"{ref.tokens:,} → {ref.stub_tokens:,}",
            )
        table.add_row(
            "",
            "",
            "",
            "",
            Text(f"batch {batch.index + 1} saved", style="dim"),
            Text(f"{batch.tokens_saved:,}", style="dim"),
            end_section=True,
        )
    return table


def render_dropped(plan: Plan, transcript: Transcript) -> RenderableType | None:
    """Dropped turns and rounds, with neighbours of the same kind merged into one row."""
    if not plan.dropped:
        return None
    groups: list[list[Dropped]] = []
    for d in plan.dropped:
        if groups and groups[-1][-1].kind == d.kind and groups[-1][-1].stop == d.start:
            groups[-1].append(d)
        else:
            groups.append([d])
    total = sum(d.tokens for d in plan.dropped)
    table = WholeTable(
        title=f"Dropped {_count_kinds(plan.dropped)} ({total:,} tokens), replaced by one truncation note",
        title_justify="left",
        show_edge=False,
    )
    for col in ("dropped", "messages", "lines", "tokens"):
        table.add_column(col, justify="right" if col == "tokens" else "left")
    for group in groups:
        start, stop = group[0].start, group[-1].stop
        a, b = _line(transcript, start), _line(transcript, stop - 1)
        what = f"{len(group)} {group[0].kind}{'s' if len(group) > 1 else ''}"
        table.add_row(
            what,
            f"{start}–{stop - 1}" if stop - start > 1 else str(start),
            f"{a}–{b}" if a and a != b else a,
            f"{sum(d.tokens for d in group):,}",
        )
    return table


def _count_kinds(dropped: tuple[Dropped, ...]) -> str:
    counts: dict[str, int] = {}
    for d in dropped:
        counts[d.kind] = counts.get(d.kind, 0) + 1
    return ", ".join(f"{n} {kind}{'s' if n > 1 else ''}" for kind, n in counts.items())


def render_protected(plan: Plan) -> RenderableType | None:
    if not plan.results:
        return None
    budget_share = plan.options.protected_fraction
    size = sum(r.tokens for r in plan.protected)
    names = ", ".join(f"{markup_safe(r.tool)} {markup_safe(r.call_id)} ({r.tokens:,})" for r in plan.protected[-6:])
    more = f"… {len(plan.protected) - 6} more, " if len(plan.protected) > 6 else ""
    lines = [
        Text(
            f"Protected tail: the newest {len(plan.protected)} result(s), {size:,} tokens "
            f"(allowance {budget_share:.0%} of the budget), kept whole: {more}{names}",
            style="green",
        ),
    ]
    if plan.too_small:
        lines.append(
            Text(f"Never cleared (not much bigger than their stub): {len(plan.too_small)} result(s)", style="dim")
        )
    left = len(plan.candidates) - len(plan.cleared)
    if plan.candidates and left:
        lines.append(Text(f"Clearable but not needed: {left} result(s)", style="dim"))
    return Group(*lines)


def _preview(message: Message, width: int = 60) -> str:
    parts = []
    for block in message.content:
        if isinstance(block, (TextBlock, Thinking)):
            parts.append(block.text)
        elif isinstance(block, ToolCall):
            parts.append(f"→ {block.name}({block.input_json})")
        elif isinstance(block, ToolResult):
            inner = " ".join(b.text for b in block.content if isinstance(b, TextBlock))
            parts.append(f"← {block.call_id}: {inner}")
        elif isinstance(block, Image):
            parts.append(f"[image {block.media_type}]")
        elif isinstance(block, Other):
            parts.append(f"[{block.kind}]")
    text = " ".join(" ".join(parts).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def render_full(plan: Plan, transcript: Transcript) -> RenderableType:
    """The request message by message: kept, cleared, dropped, and the note."""
    fates = plan.message_fates()
    shown = clear_results(transcript.messages, plan.cleared)
    table = WholeTable(title="The request, message by message", title_justify="left", show_edge=False)
    for col in ("msg", "line", "role", "tokens", "fate", "content"):
        table.add_column(col, justify="right" if col in ("msg", "line", "tokens") else "left")
    style = {"kept": "", "head": "bold", "cleared": "cyan", "dropped": "red strike"}
    for i, message in enumerate(transcript.messages):
        if plan.note and i == plan.head[1]:
            table.add_row(
                "",
                "",
                "user",
                "",
                Text("note", style="magenta"),
                Text(_preview(Message("user", (TextBlock(plan.note),))), style="magenta"),
            )
        fate = fates[i]
        table.add_row(
            str(i),
            _line(transcript, i),
            message.role,
            f"{plan.message_tokens[i]:,}",
            Text(fate, style=style[fate]),
            Text(_preview(shown[i]), style=style[fate]),
        )
    return table


def render_repairs(plan: Plan) -> RenderableType | None:
    if not plan.repairs:
        return None
    table = WholeTable(
        title=f"Repaired {len(plan.repairs)} defect(s) first, so the request is valid",
        title_justify="left",
        show_edge=False,
    )
    for col in ("repair", "msg", "line", "call id", "why"):
        table.add_column(col, justify="right" if col in ("msg", "line") else "left")
    for r in plan.repairs:
        line = "" if r.source.line is None else str(r.source.line)
        table.add_row(r.kind, str(r.message_index), line, markup_safe(r.call_id), markup_safe(r.why))
    return table


def render_plan(plan: Plan, transcript: Transcript, *, full: bool = False) -> RenderableType:
    """The diff. ``transcript`` is the input; indices refer to it after repairs."""
    parts: list[RenderableType] = [render_summary(plan, transcript)]
    repairs = render_repairs(plan)
    transcript = repaired(transcript, plan)
    if repairs is not None:
        parts += [Text(), repairs]
    for piece in (
        render_batches(plan, transcript, full=full),
        render_dropped(plan, transcript),
        render_protected(plan),
    ):
        if piece is not None:
            parts += [Text(), piece]
    if full:
        parts += [Text(), render_full(plan, transcript)]
    if plan.outcome == "too-long":
        parts += [Text(), Text(too_long_message(plan), style="bold red")]
    return Group(*parts)
