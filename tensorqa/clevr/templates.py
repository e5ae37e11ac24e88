"""CLEVR's template files (any folder of template JSON; CLEVR 1.0's by default) and synonyms."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import orjson

from tensorqa.errors import TensorQAError
from tensorqa.limits import check_name, read_json

# CLEVR 1.0's own files, shipped with the package (data/clevr/, BSD licence beside them)
CLEVR_DATA = Path(str(resources.files("tensorqa.data").joinpath("clevr")))
DEFAULT_TEMPLATES_DIR = CLEVR_DATA / "CLEVR_1.0_templates"
DEFAULT_SYNONYMS = CLEVR_DATA / "synonyms.json"

PARAM_TYPES = ("Size", "Color", "Material", "Shape", "Relation")
KEY_TYPES = ("Size", "Color", "Material", "Shape")
FILTER_KINDS = ("filter", "filter_unique", "filter_count", "filter_exist")
RELATE_FILTER_KINDS = tuple("relate_" + k for k in FILTER_KINDS)
PLAIN = {"scene", "unique", "union", "intersect", "count", "exist", "less_than", "greater_than", "equal_integer",
         "equal_object"} | {f"{p}_{a}" for p in ("same", "query", "equal") for a in ("size", "color", "material", "shape")}
SINGLE_FILTERS = {f"filter_{a}" for a in ("size", "color", "material", "shape")}


@dataclass(frozen=True)
class Template:
    filename: str  # e.g. "zero_hop.json"
    index: int  # question_family_index: position within the file
    text: tuple[str, ...]
    nodes: tuple[dict, ...]
    params: tuple[tuple[str, str], ...]  # (name, type)
    constraints: tuple[dict, ...]

    @property
    def key(self) -> str:
        return f"{self.filename}#{self.index}"

    @functools.cached_property
    def param_type(self) -> dict[str, str]:
        return dict(self.params)

    @functools.cached_property
    def _nulls(self) -> frozenset[str]:
        return frozenset(p for c in self.constraints if c["type"] == "NULL" for p in c["params"])

    def null_params(self) -> frozenset[str]:
        return self._nulls

    @functools.cached_property
    def content_key(self) -> bytes:
        """Everything that defines the template, as canonical JSON (a template is a value: its
        fields are not changed after loading): the plan cache's key, computed once per template."""
        return orjson.dumps([self.filename, self.index, self.text, self.nodes, self.params, self.constraints],
                            option=orjson.OPT_SORT_KEYS)


def param_order(t: Template) -> list[str]:
    """The parameters in assignment order (``records.param_words``'s order, the text's slots)."""
    return list(dict.fromkeys(p for node in t.nodes for p in node.get("side_inputs", [])))


def answer_domain(t: Template) -> tuple[str, tuple]:
    """(kind, values) of the final node's output: the answer histogram's bins."""
    from tensorqa.clevr.constants import MAX_COUNT
    from tensorqa.scenes.static_batch import clevr_vocab

    typ = t.nodes[-1]["type"]
    if typ.startswith("query_"):
        a = typ.removeprefix("query_")
        return "attr:" + a, clevr_vocab().values(a)
    if typ.endswith("count"):
        return "int", tuple(range(MAX_COUNT + 1))
    return "bool", (False, True)


def _check_template(t: dict, where: str, index: int, filename: str) -> Template:
    if not isinstance(t, dict) or not all(k in t for k in ("text", "nodes", "params")):
        raise TensorQAError(f"{where}: template {index} lacks text / nodes / params")
    if not (isinstance(t["text"], list) and all(isinstance(x, str) for x in t["text"])):
        raise TensorQAError(f"{where}: template {index}: 'text' is a list of strings")
    for key in ("nodes", "params", "constraints"):
        if not isinstance(t.get(key, []), list):
            raise TensorQAError(f"{where}: template {index}: '{key}' is a list")
    if not all(isinstance(c, dict) for c in t.get("constraints", [])):
        raise TensorQAError(f"{where}: template {index}: a constraint is not a JSON object")
    params = []
    for p in t["params"]:
        if not isinstance(p, dict) or p.get("type") not in PARAM_TYPES or not isinstance(p.get("name"), str):
            raise TensorQAError(f"{where}: template {index}: param {p!r} has no type among {', '.join(PARAM_TYPES)}")
        params.append((p["name"], p["type"]))
    names = {n for n, _ in params}
    for k, node in enumerate(t["nodes"]):
        typ = node.get("type") if isinstance(node, dict) else None
        if typ not in PLAIN | SINGLE_FILTERS | set(FILTER_KINDS) | set(RELATE_FILTER_KINDS) | {"relate"}:
            raise TensorQAError(f"{where}: template {index} node {k}: unknown node type {typ!r}")
        if not isinstance(node.get("inputs", []), list) or not isinstance(node.get("side_inputs", []), list):
            raise TensorQAError(f"{where}: template {index} node {k}: inputs and side_inputs are lists")
        if any(isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < k for i in node.get("inputs", [])):
            raise TensorQAError(f"{where}: template {index} node {k}: inputs {node.get('inputs')} do not name earlier nodes")
        for s in node.get("side_inputs", []):
            if s not in names:
                raise TensorQAError(f"{where}: template {index} node {k}: side input {s!r} is not a param")
    for c in t.get("constraints", []):
        if c.get("type") not in ("NULL", "NEQ", "OUT_NEQ"):
            raise TensorQAError(f"{where}: template {index}: unknown constraint type {c.get('type')!r}")
    if not t["text"]:
        raise TensorQAError(f"{where}: template {index} has no text")
    return Template(filename, index, tuple(t["text"]), tuple(t["nodes"]), tuple(params), tuple(t.get("constraints", [])))


def load_templates(folder: str | Path) -> list[Template]:
    """Every template of every ``*.json`` in ``folder``, files in sorted name order (CLEVR uses
    ``os.listdir`` order, defect 6: not reproducible across filesystems)."""
    d = Path(folder)
    if not d.is_dir():
        raise TensorQAError(f"{d}: template folder does not exist")
    files = sorted(d.glob("*.json"))
    if not files:
        raise TensorQAError(f"{d}: no template files (*.json)")
    out = []
    for f in files:
        check_name(f.name, str(d), "template file name")  # the template's name in every question
        data = read_json(f, "CLEVR template file")
        if not isinstance(data, list):
            raise TensorQAError(f"{f}: not a CLEVR template file (expected a list of templates)")
        out += [_check_template(t, str(f), i, f.name) for i, t in enumerate(data)]
    return out


def load_synonyms(path: str | Path | None) -> dict[str, list[str]]:
    if path is None:
        return {}
    p = Path(path)
    if not p.is_file():
        raise TensorQAError(f"{p}: synonyms file does not exist")
    d = read_json(p, "synonyms file")
    if not isinstance(d, dict) or not all(isinstance(v, list) and v and all(isinstance(w, str) for w in v)
                                          for v in d.values()):
        raise TensorQAError(f"{p}: not a synonyms file (expected {{word: [synonyms, ...]}})")
    return d
