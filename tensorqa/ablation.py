"""``ablate``: what changes in a benchmark's answers when a reasoning step is removed.

    tensorqa ablate STORE --ablate before=while [--ablate first_episode=last_episode] [--templates ...]

An ablation makes one name mean another in the primitive registry (:func:`registry.ablate`): a
temporal word (``before=while``; ``video`` removes the localization) or a primitive. Over the direct
questions the generator asks (:func:`tensorqa.agqa.validity.rule_cells`), per template: ``questions``,
``with_step`` (those that take an ablated step), ``answered`` (of those, still answered) and
``changed`` (of those, answered otherwise); ``--questions`` lists them (:data:`QUESTION_SCHEMA`).
A template whose answers rarely change is answered without the step, so a model can skip it too.

Both sides run the same grid evaluation over the same blocks (each ablated block from a context built
under the ablation: a ``GridContext`` keeps what it computed first), so counts do not depend on the
block size or device. Questions that reach an object or action through a reference are not counted
(the same cells through another phrase). A temporal ablation changes the frames a question reads,
not its words: actWhatAfterAll / actWhatBefore keep their rule (``act_what``) over the new frames.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from tqdm import tqdm

from tensorqa import kernels as kernels_mod
from tensorqa.errors import TensorQAError
from tensorqa.outputs import new_partial, partial_path, publish, write_atomic, write_error
from tensorqa.agqa.records import TEMPLATE_NAMES, CellBlock, answer_strings, coded
from tensorqa.agqa.grid import GridContext, evaluate
from tensorqa.engine.primitives import registry
from tensorqa.agqa.semantics import get_semantics
from tensorqa.scenes.store import open_store
from tensorqa.scenes.vocab import vocab
from tensorqa.engine.windows import WINDOW_KINDS

__all__ = ["TemplateChange", "QUESTION_SCHEMA", "parse_ablation", "ablate_store", "format_ablation", "write_report"]


@dataclass
class TemplateChange:
    """What one template's direct questions do under the ablations (counts over every video)."""

    template: str
    answer_kind: str
    questions: int = 0  # direct questions the generator asks
    with_step: int = 0  # of those, questions that take an ablated step (its temporal word, or a primitive it calls)
    answered: int = 0  # of those, still defined under the ablations
    changed: int = 0  # of those answered, answers that differ
    yes_before: int = 0  # yes/no templates: "yes" answers of the questions with the step
    yes_after: int = 0  # ... and of the answered ones under the ablations
    other_changed: int = 0  # questions without the step whose answer (or its being defined) changed: 0 when
    #                         the step is the only way the ablation reaches the answers

    def add(self, other: "TemplateChange") -> None:
        """Add ``other``'s counts (every int field) to this row's."""
        for f in fields(self):
            if isinstance(getattr(self, f.name), int):
                setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def parse_ablation(text: str) -> tuple[str, str]:
    """``"NAME=REPLACEMENT"`` -> (name, replacement), checked against the registry's rules."""
    name, sep, replacement = text.partition("=")
    name, replacement = name.strip(), replacement.strip()
    if not sep or not name or not replacement:
        raise TensorQAError(f"--ablate {text!r}: expected NAME=REPLACEMENT, e.g. before=while or "
                            "first_episode=last_episode")
    try:
        registry.ablate(name, replacement).undo()  # the registry's own checks (names, temporal words)
    except TensorQAError as e:
        hint = ""
        if "unknown primitive" in str(e):
            hint = (f" (temporal words: {', '.join(WINDOW_KINDS)}; primitives: "
                    f"{', '.join(registry.names())})")
        raise TensorQAError(f"--ablate {text!r}: {str(e).removeprefix('registry: ')}{hint}") from None
    return name, replacement


@contextlib.contextmanager
def _ablated(ablations: list[tuple[str, str]]):
    """The registry with every ablation applied, undone on exit (also if one fails to apply)."""
    with contextlib.ExitStack() as stack:
        for name, replacement in ablations:
            stack.enter_context(registry.ablate(name, replacement))
        yield


def _with_step(grid, plan, cells, ablations: list[tuple[str, str]]) -> torch.Tensor:
    """bool[M]: the cells whose window says an ablated word, or whose program calls an ablated primitive."""
    M = cells[0].shape[0]
    names = {registry.canonical(a) for a, _ in ablations if a not in WINDOW_KINDS}
    if names & set(plan.primitives):
        return torch.ones(M, dtype=torch.bool, device=grid.answer.device)
    words = [WINDOW_KINDS.index(a) for a, _ in ablations if a in WINDOW_KINDS]
    if not words or grid.windows is None:
        return torch.zeros(M, dtype=torch.bool, device=grid.answer.device)
    row = cells[0]
    said = grid.windows.word[grid.video[row], grid.values["window"][row]]
    return torch.isin(said, torch.tensor(words, device=said.device))


def _block_changes(batch, names: list[str], ablations: list[tuple[str, str]], rel_obj_counts: torch.Tensor,
                   semantics, questions: bool = False) -> tuple[list[TemplateChange], pa.Table | None]:
    """Per template, the block's direct questions plainly and ablated (and their QUESTION_SCHEMA table)."""
    from tensorqa.agqa.validity import rule_cells
    from tensorqa.agqa.grid import compile_skeleton
    from tensorqa.agqa.templates import TEMPLATES

    text = ", ".join(f"{a}={b}" for a, b in ablations)
    plain_ctx = GridContext(batch, semantics)
    asked = []  # (template, grid, question cells, their plain answers, which take the step, their CellBlock)
    for name in names:
        spec = TEMPLATES[name]
        grid = evaluate(spec.program, batch, semantics, context=plain_ctx)
        keep, pairs, rules = rule_cells(spec.program, grid, plain_ctx, rel_obj_counts, spec.windows)
        cells = (keep if pairs is None else keep & pairs).nonzero(as_tuple=True)
        step = _with_step(grid, compile_skeleton(spec.program, semantics), cells, ablations)
        found = CellBlock.from_index(name, cells, rules) if questions else None
        asked.append((name, grid, cells, grid.answer[cells], step, found))
    del plain_ctx
    out, tables = [], []
    with _ablated(ablations):
        ctx = GridContext(batch, semantics)  # built under the ablations: its windows and steps are theirs
        for name, grid, cells, before, step, found in asked:
            try:
                other = evaluate(TEMPLATES[name].program, batch, semantics, context=ctx)
            except TensorQAError:
                raise
            except Exception as e:  # noqa: BLE001 - a primitive ablated into one that takes other arguments
                raise TensorQAError(f"--ablate {text}: template {name} cannot run with it "
                                    f"({type(e).__name__}: {e})") from None
            if other.answer.shape != grid.answer.shape or not torch.equal(other.video, grid.video):
                raise TensorQAError(f"--ablate {text}: it changes which questions template {name} asks "
                                    f"(grid {tuple(grid.answer.shape)} becomes {tuple(other.answer.shape)}); "
                                    "only ablations that keep the questions can be compared")
            answered, after = other.defined[cells], other.answer[cells]
            differs = answered & (after != before)
            row = TemplateChange(name, grid.answer_kind, questions=int(before.numel()), with_step=int(step.sum()),
                                 answered=int((answered & step).sum()), changed=int((differs & step).sum()),
                                 other_changed=int(((differs | ~answered) & ~step).sum()))
            if grid.answer_kind == "yes/no":
                row.yes_before = int(((before == 1) & step).sum())
                row.yes_after = int((answered & (after == 1) & step).sum())
            out.append(row)
            if found is not None and row.with_step:
                keep = step.cpu().numpy()
                tables.append(_question_table(found.take(np.flatnonzero(keep)), batch.video_ids, grid.answer_kind,
                                              answered.cpu().numpy()[keep], after.cpu().numpy()[keep]))
    return out, (pa.concat_tables(tables) if tables else None)


# the questions that take the step: the pool's ingredient columns ("" where unused) identify each
QUESTION_SCHEMA = pa.schema([pa.field(n, pa.string(), nullable=False) for n in (
    "video_id", "template", "window", "window_action", "window_action2", "relation", "object", "object2", "action",
    "action2", "answer")] + [pa.field("ablated_answer", pa.string()),  # null: no answer under the ablation
                             pa.field("changed", pa.bool_(), nullable=False)])


def _question_table(block: CellBlock, video_ids: tuple[str, ...], kind: str, answered: np.ndarray,
                    after: np.ndarray) -> pa.Table:
    """QUESTION_SCHEMA rows of ``block``, ``after`` the answers under the ablation where ``answered``."""
    v = vocab()
    strings = pa.array(answer_strings(kind), pa.string())
    before = strings.take(pa.array(block.answer))
    ablated = strings.take(pa.array(np.where(answered, after, 0).astype(np.int32), mask=~answered))
    columns = {
        "video_id": pa.array(video_ids, pa.string()).take(pa.array(block.video)),
        "template": pa.array(TEMPLATE_NAMES, pa.string()).take(pa.array(block.template)),
        "window": coded(WINDOW_KINDS, block.window), "window_action": coded(v.actions, block.window_x),
        "window_action2": coded(v.actions, block.window_y), "relation": coded(v.relation_ids, block.relation),
        "object": coded(v.object_ids, block.object), "object2": coded(v.object_ids, block.object2),
        "action": coded(v.actions, block.action), "action2": coded(v.actions, block.action2),
        "answer": before, "ablated_answer": ablated,
        "changed": pa.array(answered & (after.astype(np.int64) != block.answer)),
    }
    return pa.table({k: c.cast(pa.string()) if pa.types.is_dictionary(c.type) else c for k, c in columns.items()},
                    schema=QUESTION_SCHEMA)


def ablate_store(store, ablations: list[tuple[str, str]] | list[str], templates: list[str] | None = None,
                 device: str = "cpu", batch_videos: int | None = None, max_videos: int | None = None,
                 semantics: str = "agqa", kernels: str = "auto", include_retired: bool = False,
                 progress: bool = True, questions: str | os.PathLike | None = None) -> dict:
    """Every template's direct questions on ``store``, plainly and under ``ablations`` (pairs or
    ``"name=replacement"`` texts, applied together); ``questions``: also that Parquet file
    (:data:`QUESTION_SCHEMA`). Returns ``{"ablations", "videos", "seconds", "templates": [TemplateChange
    as dict] (catalogue order), "total"}``."""
    from tensorqa.agqa.options import checked_run_options, resolve_templates, store_rel_obj_counts, videos_used

    pairs = [parse_ablation(a if isinstance(a, str) else "=".join(a)) for a in ablations]
    if not pairs:
        raise TensorQAError("ablate: name at least one --ablate NAME=REPLACEMENT")
    batch_videos = checked_run_options(device, batch_videos, max_videos)
    names = resolve_templates(templates, include_retired)
    sem = get_semantics(semantics)
    totals = {n: None for n in names}
    t0 = time.perf_counter()
    with open_store(store) as src:
        rel_obj_counts = store_rel_obj_counts(src, device)
        n = videos_used(src, max_videos)
        out = _QuestionWriter(questions) if questions is not None else None
        bar = tqdm(total=n, desc="ablate", unit="video", disable=not progress, dynamic_ncols=True)
        try:
            with kernels_mod.configure(kernels, device), torch.inference_mode():
                for batch in src.blocks(batch_videos, 0, n, device=device):
                    rows, table = _block_changes(batch, names, pairs, rel_obj_counts, sem, questions=out is not None)
                    for row in rows:
                        if totals[row.template] is None:
                            totals[row.template] = row
                        else:
                            totals[row.template].add(row)
                    if table is not None:
                        out.write(table)
                    bar.update(len(batch))
            if out is not None:
                out.close()
        except BaseException:
            if out is not None:
                out.abort()
            raise
        finally:
            bar.close()
    rows = [totals[n] for n in names if totals[n] is not None]
    total = TemplateChange("all", "")
    for r in rows:
        total.add(r)
    return {"ablations": [f"{a}={b}" for a, b in pairs], "videos": n, "semantics": sem.name,
            "seconds": round(time.perf_counter() - t0, 3), "templates": [asdict(r) for r in rows],
            "total": asdict(total)}


class _QuestionWriter:
    """The per-question Parquet file, written to ``path.partial`` and renamed by ``close()``."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.tmp = partial_path(self.path)
        try:
            new_partial(self.path)  # new: a link planted at either name is not written through
            self.writer = pq.ParquetWriter(self.tmp, QUESTION_SCHEMA, compression="zstd")
        except OSError as e:
            self.tmp.unlink(missing_ok=True)
            raise write_error(self.path, e) from None

    def write(self, table: pa.Table) -> None:
        try:
            self.writer.write_table(table, row_group_size=1 << 20)
        except OSError as e:
            raise write_error(self.path, e) from None

    def close(self) -> None:
        try:
            self.writer.close()
        except OSError as e:
            raise write_error(self.path, e) from None
        publish(self.tmp, self.path)

    def abort(self) -> None:
        try:
            self.writer.close()
        except Exception:  # noqa: BLE001 - a full disk fails the close again: the file is removed anyway
            pass
        finally:
            self.tmp.unlink(missing_ok=True)


def _share(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}" if whole else "-"


def format_ablation(report: dict) -> str:
    """The report as a table: one row per template, then the total."""
    total = report["total"]
    head = (f"ablating {', '.join(a.replace('=', ' -> ') for a in report['ablations'])}: {report['videos']:,} videos, "
            f"{total['questions']:,} direct questions, {total['with_step']:,} of them with the step, "
            f"in {report['seconds']:.1f} s")
    lines = [head, "",
             f"{'template':24s} {'questions':>11s} {'with step':>11s} {'answered':>11s} {'changed':>11s} "
             f"{'changed %':>9s} {'yes % before':>12s} {'yes % after':>11s}"]
    for r in report["templates"] + [total]:
        binary = r["answer_kind"] == "yes/no"
        lines.append(f"{r['template']:24s} {r['questions']:>11,} {r['with_step']:>11,} {r['answered']:>11,} "
                     f"{r['changed']:>11,} {_share(r['changed'], r['answered']):>9s} "
                     f"{_share(r['yes_before'], r['with_step']) if binary else '':>12s} "
                     f"{_share(r['yes_after'], r['answered']) if binary else '':>11s}")
    lines += ["", "with step: the question's window says an ablated word, or its program calls an ablated primitive; "
              "answered: of those, still answered under the ablation; changed % = changed / answered: how often the "
              "step decides the answer"]
    if total["other_changed"]:
        lines.append(f"{total['other_changed']:,} questions without the step changed too (other_changed in --json)")
    return "\n".join(lines)


def write_report(report: dict, path: str | os.PathLike) -> Path:
    """Write the report as JSON at ``path`` (via ``path.partial``, renamed when complete)."""
    return write_atomic(path, json.dumps(report, indent=1) + "\n")
