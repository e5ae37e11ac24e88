"""CLEVR question records: the program expanded as CLEVR's generator expands a template, the answer's
text spelling, the questions JSON of the torch backend (Parquet: ``parquet``, both backends)."""

from __future__ import annotations

from pathlib import Path

import orjson

from tensorqa.clevr.templates import FILTER_KINDS, KEY_TYPES, RELATE_FILTER_KINDS, Template
from tensorqa.errors import TensorQAError
from tensorqa.outputs import write_atomic
from tensorqa.scenes.static_batch import clevr_vocab


def expand_program(t: Template, words: dict[str, str]) -> list[dict]:
    """CLEVR's expansion of the template's nodes into program nodes {type, inputs, side_inputs}."""
    prog: list[dict] = []
    imap: dict[int, int] = {}
    ty = t.param_type
    for k, node in enumerate(t.nodes):
        typ = node["type"]
        ins = [imap[i] for i in node.get("inputs", [])]
        if typ in FILTER_KINDS or typ in RELATE_FILTER_KINDS:
            cur = ins[0]
            if typ in RELATE_FILTER_KINDS:
                r = next(p for p in node["side_inputs"] if ty[p] == "Relation")
                prog.append({"type": "relate", "inputs": [cur], "side_inputs": [words[r]]})
                cur = len(prog) - 1
            for p in node["side_inputs"]:
                if ty[p] in KEY_TYPES and words[p] not in ("", "thing"):
                    prog.append({"type": f"filter_{ty[p].lower()}", "inputs": [cur], "side_inputs": [words[p]]})
                    cur = len(prog) - 1
            suffix = typ.removeprefix("relate_").removeprefix("filter").lstrip("_")
            if suffix:
                prog.append({"type": suffix, "inputs": [cur], "side_inputs": []})
                cur = len(prog) - 1
            imap[k] = cur
            continue
        side = [words[p] for p in node.get("side_inputs", [])]
        prog.append({"type": typ, "inputs": ins, "side_inputs": side})
        imap[k] = len(prog) - 1
    return prog


def answer_value(kind: str, code: int):
    """The raw answer CLEVR's generator writes: bool, int, or the attribute's word."""
    if kind == "bool":
        return bool(code)
    if kind == "int":
        return int(code)
    return clevr_vocab().values(kind.removeprefix("attr:"))[int(code)]


def answer_text(a) -> str:
    """An answer as released CLEVR v1.0 spells it in text ("yes", "3", "red")."""
    return ("yes" if a else "no") if isinstance(a, bool) else str(a)


def clevr_json_program(prog: list[dict], outputs: list | None) -> list[dict]:
    """The questions-JSON spelling: side_inputs renamed value_inputs; ``_output`` kept when given
    (defect 3)."""
    out = []
    for i, n in enumerate(prog):
        d = {"type": n["type"], "inputs": n["inputs"], "value_inputs": n["side_inputs"]}
        if outputs is not None:
            d["_output"] = outputs[i]
        out.append(d)
    return out


def slot(param: str) -> str:
    """The placeholder of a parameter's word in a program skeleton."""
    return f"@@{param}@@"


def program_skeleton(t: Template, words: dict[str, str], memo: dict, tid: int) -> str:
    """The questions-JSON program (no ``_output``) as JSON text with each specified parameter's word
    as its :func:`slot`: one per template and set of specified parameters (the expansion's shape),
    kept in ``memo``."""
    spec = tuple(w not in ("", "thing") for w in words.values())
    key = ("program", tid, spec)
    skel = memo.get(key)
    if skel is None:
        slots = {p: slot(p) if s else w for (p, w), s in zip(words.items(), spec)}
        skel = memo[key] = orjson.dumps(clevr_json_program(expand_program(t, slots), None)).decode()
    return skel


def write_questions_json(path: str | Path, info: dict, questions: list[dict]) -> Path:
    p = Path(path)
    if not p.parent.is_dir():
        raise TensorQAError(f"{p}: output directory {p.parent} does not exist")
    for i, q in enumerate(questions):
        q["question_index"] = i
        if isinstance(q["program"], str):  # programs given as JSON text go in as they are
            q["program"] = orjson.Fragment(q["program"])
    return write_atomic(p, orjson.dumps({"info": info, "questions": questions}))
