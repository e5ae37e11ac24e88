"""The scalar executor, AGQA's oracle: walks one program over one video, calling each primitive's
scalar twin (``engine/scalar/``) from a table of handlers by program function.

Handlers read only the program's shape; the rules live in the twins. It applies everything that
makes an answer undefined (docs/reference/agqa_semantics.md §a, §b), not the validity or
reference-building rules; where ``Filter(frame, [objects])`` stands picks the §c.1 interaction rule.
Malformed programs raise ``TensorQAError``: they are not questions."""

from __future__ import annotations

from tensorqa.errors import TensorQAError
from tensorqa.agqa.program import Call, Items, Node, Slot, Word, parse_program, verb_index, word_kinds
from tensorqa.engine.scalar.video import Entity, NoAnswer, ScalarVideo, Undefined, Window, scene_of
from tensorqa.agqa.semantics import AGQA, Semantics, get_semantics, resolve_to_action
from tensorqa.scenes.batch import VideoScene
from tensorqa.scenes.vocab import vocab
from tensorqa.engine.scalar import twin  # importing it registers the twins
from tensorqa.engine.windows import ONE_ACTION_WINDOWS


# -- shape helpers -----------------------------------------------------------------------------------------
def _is_word(node: Node, *texts: str) -> bool:
    return isinstance(node, Word) and (not texts or node.text in texts)


def _is_call(node: Node, func: str, nargs: int | None = None) -> bool:
    return isinstance(node, Call) and node.func == func and (nargs is None or len(node.args) == nargs)


def _unsupported(node: Node, why: str = "") -> TensorQAError:
    return TensorQAError(f"program: unsupported shape {str(node)!r}" + (f" ({why})" if why else ""))


def _unfilled(node: Node) -> None:
    if isinstance(node, Slot):
        raise TensorQAError(f"program: unfilled slot {node} in the program")


def _frame_filter(node: Node) -> tuple:
    """Decode ``Filter(frame, [keys])`` -> ("objects",) | ("relations",) | ("actions",) |
    ("relations", <relation node>)."""
    if not (_is_call(node, "Filter", 2) and _is_word(node.args[0], "frame") and isinstance(node.args[1], Items)):
        raise _unsupported(node, "expected Filter(frame, [...])")
    keys = node.args[1].items
    if len(keys) == 1 and _is_word(keys[0], "objects", "relations", "relation", "actions"):
        k = keys[0].text
        return ("relations",) if k == "relation" else (k,)
    if len(keys) == 3 and _is_word(keys[0], "relations", "relation") and _is_word(keys[2], "objects"):
        return ("relations", keys[1])
    raise _unsupported(node, "unknown Filter keys")


def _is_length(node: Node) -> bool:
    """``Subtract(Query(end, action), Query(start, action))``."""
    return (_is_call(node, "Subtract", 2)
            and _is_call(node.args[0], "Query", 2) and _is_word(node.args[0].args[0], "end")
            and _is_word(node.args[0].args[1], "action")
            and _is_call(node.args[1], "Query", 2) and _is_word(node.args[1].args[0], "start")
            and _is_word(node.args[1].args[1], "action"))


def _word_id(kind: str, text: str) -> int:
    """The id of a word of ``kind`` ("object", "relation", "action", "verb"), else TensorQAError."""
    v = vocab()
    lookup = {"object": v.object_index, "relation": v.relation_index, "action": v.action_index, "verb": verb_index}[kind]
    try:
        return lookup(text)
    except TensorQAError:
        raise TensorQAError(f"program: {text!r} is not a{'n' if kind[0] in 'ao' else ''} {kind}") from None


def _video_actions(node: Node, with_action: bool) -> bool:
    """``Filter(video, [actions])`` (or ``[actions, A]`` with ``with_action``)."""
    return (_is_call(node, "Filter", 2) and _is_word(node.args[0], "video") and isinstance(node.args[1], Items)
            and len(node.args[1]) == 1 + with_action and _is_word(node.args[1][0], "actions"))


# -- the walker ----------------------------------------------------------------------------------------------
class _Walker:
    def __init__(self, video: ScalarVideo, sem: Semantics):
        self.v = video
        self.sem = sem
        self.vocab = vocab()
        self.built_from: tuple = ()  # the classes the running question was built from (resolve_to_action)

    def answer(self, node: Node):
        if isinstance(node, Call) and (node.func in ("Exists", "AND", "XOR", "Equals", "Compare", "Choose")
                                       or _is_call(node, "Query", 2) or _is_call(node, "Superlative", 3)):
            return self.value(node)
        raise _unsupported(node, "not an answer-producing program")

    def value(self, node: Node):
        _unfilled(node)
        handler = _HANDLERS.get(node.func) if isinstance(node, Call) else None
        if handler is None:
            raise _unsupported(node)
        return handler(self, node)

    def boolean(self, node: Node) -> bool:
        value = self.value(node)
        if not isinstance(value, bool):
            raise _unsupported(node, "expected a yes/no sub-program")
        return value

    # -- arguments --------------------------------------------------------------------------------------
    def entity(self, node: Node) -> Entity:
        """An object or action argument of Equals: a word, a reference or a sub-program."""
        if isinstance(node, Word):
            kinds = [Entity(kind, _word_id(kind, node.text)) for kind in ("object", "action")
                     if kind in word_kinds(node.text)]
            if len(kinds) != 1:
                raise TensorQAError(f"program: {node.text!r} is not an object or an action")
            return kinds[0]
        if _is_call(node, "ToAction"):
            return Entity("action", self.action(node))
        value = self.value(node)
        if not isinstance(value, Entity):
            raise _unsupported(node, "expected an object or an action")
        return value

    def object(self, node: Node) -> int:
        _unfilled(node)
        if isinstance(node, Word):
            return _word_id("object", node.text)
        value = self.value(node)
        if not (isinstance(value, Entity) and value.kind == "object"):
            raise _unsupported(node, "expected an object reference")
        return value.index

    def relation(self, node: Node) -> int:
        _unfilled(node)
        if not isinstance(node, Word):
            raise _unsupported(node, "relations are always plain words")
        return _word_id("relation", node.text)

    def action(self, node: Node) -> int:
        _unfilled(node)
        if isinstance(node, Word):
            return _word_id("action", node.text)
        if _is_call(node, "ToAction", 2):
            return self.to_action(node)
        raise _unsupported(node, "expected an action phrase or ToAction(verb, object)")

    def to_action(self, node: Call) -> int:
        verb_word, obj_node = node.args
        if not isinstance(verb_word, Word):
            raise _unsupported(node, "ToAction's first argument is a verb")
        verb = _word_id("verb", verb_word.text)
        o = self.object(obj_node)
        voc = self.vocab
        classes = voc.actions_named(verb, o)
        if len(classes) == 1:
            return classes[0]
        if not classes:
            raise NoAnswer(f"no action has verb {verb_word.text!r} and object {voc.object_english[o]!r}")
        present = [a for a in classes if self.v.instances_of(a)]
        a = resolve_to_action(present, self.sem, self.built_from)
        if a is None:
            raise NoAnswer(f"ToAction({verb_word.text}, {voc.object_english[o]}) matches "
                           f"{len(present)} actions of the video")
        return a

    def window(self, node: Node) -> Window:
        if _is_word(node, "video"):
            return twin("localize")(self.v, self.sem, "video")
        _unfilled(node)
        if not (_is_call(node, "Localize") and isinstance(node.args[0], Word)):
            raise _unsupported(node, "expected video or Localize(...)")
        kind = node.args[0].text
        if kind == "between":
            if len(node.args) == 3:
                x_node, y_node = node.args[1], node.args[2]
            elif isinstance(node.args[1], Items) and len(node.args[1]) == 2:
                x_node, y_node = node.args[1].items
            else:
                raise _unsupported(node, "between takes two actions")
            return twin("localize")(self.v, self.sem, "between", self.action(x_node), self.action(y_node))
        if kind not in ONE_ACTION_WINDOWS or len(node.args) != 2:
            raise _unsupported(node, "expected Localize(before|after|while, action)")
        return twin("localize")(self.v, self.sem, kind, self.action(node.args[1]))

    def contacted(self, w: Window, context: str):
        return twin("contacted")(self.v, w, self.sem.interaction_rule(context))


# -- handlers: one per program function ------------------------------------------------------------------
def _exists(ex: _Walker, node: Call) -> bool:
    item, coll = node.args
    if not _is_call(coll, "Iterate", 2):
        raise _unsupported(node, "expected Exists(x, Iterate(window, Filter(frame, [...])))")
    w = ex.window(coll.args[0])
    keys = _frame_filter(coll.args[1])
    exists = twin("exists")
    if keys == ("objects",):
        return exists(ex.contacted(w, "objExists"), ex.object(item))
    if keys == ("relations",):
        return exists(twin("relations_present")(ex.v, w), ex.relation(item))
    if keys == ("actions",):
        return exists(twin("actions_in")(ex.v, w), ex.action(item))
    r = ex.relation(keys[1])
    return exists(twin("relate")(ex.v, w)[:, r], ex.object(item))


def _only_item(ex: _Walker, node: Node) -> Entity:
    """``OnlyItem(collection)``: the one object or action of a window filter or an episode."""
    if _is_call(node, "Iterate", 2):
        w = ex.window(node.args[0])
        keys = _frame_filter(node.args[1])
        if keys == ("objects",):  # objWhatGeneral
            return Entity("object", twin("only_item")(ex.contacted(w, "objWhatGeneral")))
        if keys == ("actions",):
            return Entity("action", twin("act_what")(ex.v, ex.sem, w))
        if keys == ("relations",):
            raise _unsupported(node, "OnlyItem over relations")
        r = ex.relation(keys[1])  # objWhat, whole references
        return Entity("object", twin("only_item")(twin("relate")(ex.v, w)[:, r]))
    if _is_call(node, "IterateUntil", 4):
        direction, w_node, pred, then = node.args
        if not _is_word(direction, "forward", "backward"):
            raise _unsupported(node, "IterateUntil goes forward or backward")
        w = ex.window(w_node)
        forward = direction.text == "forward"
        if _is_call(pred, "HasItem", 1) and _frame_filter(pred.args[0]) == ("actions",) \
                and _frame_filter(then) == ("actions",):
            return Entity("action", twin("act_first" if forward else "act_last")(ex.v, ex.sem, w))
        if _is_call(pred, "Exists", 2) and _frame_filter(pred.args[1]) == ("relations",):
            keys = _frame_filter(then)
            if len(keys) != 2:
                raise _unsupported(node, "expected Filter(frame, [relations, r, objects])")
            r_stretch, r_objects = ex.relation(pred.args[0]), ex.relation(keys[1])
            found = twin("first_episode" if forward else "last_episode")(ex.v, ex.sem, w, r_stretch, r_objects)
            return Entity("object", twin("only_item")(found))
        raise _unsupported(node)
    raise _unsupported(node, "OnlyItem of an unknown collection")


def _query(ex: _Walker, node: Call) -> Entity:
    if not _is_word(node.args[0], "class") or not _is_call(node.args[1], "OnlyItem", 1):
        raise _unsupported(node, "expected Query(class, OnlyItem(...))")
    return _only_item(ex, node.args[1].args[0])


def _choose(ex: _Walker, node: Call) -> Entity:
    """objFirstChoose / objLastChoose, and objWhatChoose (answered with the first-keyframe rule)."""
    o1, o2 = ex.object(node.args[0]), ex.object(node.args[1])
    sub = node.args[2]
    if _is_call(sub, "IterateUntil", 4) and _is_word(sub.args[0], "forward", "backward"):
        direction, w_node, pred, then = sub.args
        keys = _frame_filter(then)
        if not (_is_call(pred, "XOR", 2) and len(keys) == 2):
            raise _unsupported(node)
        forward = direction.text == "forward"
    elif _is_call(sub, "Query", 2) and _is_word(sub.args[0], "class") and _is_call(sub.args[1], "OnlyItem", 1) \
            and _is_call(sub.args[1].args[0], "Iterate", 2):
        w_node, then = sub.args[1].args[0].args
        keys = _frame_filter(then)
        if len(keys) != 2:
            raise _unsupported(node)
        forward = True
    else:
        raise _unsupported(node)
    w = ex.window(w_node)
    r = ex.relation(keys[1])
    return Entity("object", twin("choose_episode")(ex.v, ex.sem, w, o1, o2, r, forward))


def _superlative(ex: _Walker, node: Call) -> Entity:
    mode, coll, func = node.args
    if not (_is_word(mode, "max", "min") and _is_length(func)):
        raise _unsupported(node, "expected Superlative(max|min, ..., Subtract(Query(end, action), Query(start, action)))")
    longest = mode.text == "max"
    if _video_actions(coll, with_action=False):  # actLongest / actShortest
        return Entity("action", twin("superlative")(ex.v, ex.sem, longest))
    if isinstance(coll, Items) and len(coll) == 2:
        if not all(_video_actions(item, with_action=True) for item in coll.items):
            raise _unsupported(node, "expected [Filter(video, [actions, A]), Filter(video, [actions, B])]")
        a, b = (ex.action(item.args[1][1]) for item in coll.items)
        return Entity("action", twin("length_compare")(ex.v, ex.sem, a, b, longest))
    raise _unsupported(node)


def _compare(ex: _Walker, node: Call) -> str:
    """actTime / relTime / objTime (§a.2)."""
    choices, sub = node.args
    if not (isinstance(choices, Items) and [str(c) for c in choices.items] == ["before", "after"]):
        raise _unsupported(node, "expected Compare([before, after], ...)")
    if not (_is_call(sub, "Exists", 2) and _is_call(sub.args[1], "Iterate", 2)):
        raise _unsupported(node)
    item, (loc, filt) = sub.args[0], sub.args[1].args
    if not (_is_call(loc, "Localize", 2) and _is_word(loc.args[0], "temporal tag")):
        raise _unsupported(node, "expected Localize(temporal tag, action)")
    keys = _frame_filter(filt)
    if len(keys) != 1:
        raise _unsupported(node)
    windows = twin("compare_windows")(ex.v, ex.sem, ex.action(loc.args[1]))
    if keys == ("actions",):  # actTime
        return twin("act_order")(ex.v, ex.sem, ex.action(item), windows)
    if keys == ("relations",):  # relTime
        occurs = ex.v.rel[:, :, ex.relation(item)].any(1)
    else:  # objTime
        occurs = ex.v.contact(ex.sem.interaction_rule("objTime"))[:, ex.object(item)]
    return twin("side_of")(occurs, windows)


def _and(ex: _Walker, node: Call) -> bool:
    return twin("and")(ex.boolean(node.args[0]), ex.boolean(node.args[1]))


def _xor(ex: _Walker, node: Call) -> bool:
    return twin("xor")(ex.boolean(node.args[0]), ex.boolean(node.args[1]), ex.sem)


def _equals(ex: _Walker, node: Call) -> bool:
    return twin("equals")(ex.entity(node.args[0]), ex.entity(node.args[1]))


_HANDLERS = {
    "Exists": _exists, "AND": _and, "XOR": _xor, "Equals": _equals, "Query": _query,
    "OnlyItem": lambda ex, node: _only_item(ex, node.args[0]), "Choose": _choose,
    "Superlative": _superlative, "Compare": _compare,
}


def render(value) -> str:
    """AGQA's released answer string: yes / no, before / after, an object's English name or an
    action's phrase."""
    v = vocab()
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value
    if isinstance(value, Entity):
        return v.object_english[value.index] if value.kind == "object" else v.action_phrases[value.index]
    raise AssertionError(f"unexpected value {value!r}")


# -- public face ------------------------------------------------------------------------------------------------
class VideoExecutor:
    """The executor bound to one video: its tables are built once for any number of programs."""

    def __init__(self, scene: VideoScene, semantics: Semantics | str = AGQA):
        self.video = ScalarVideo(scene)
        self.semantics = get_semantics(semantics)
        self._walker = _Walker(self.video, self.semantics)

    def run(self, program: Node | str, actions=()) -> "str | Undefined":
        """The released answer of ``program`` (text or tree) on this video, or Undefined.
        ``actions``: see :func:`run_program`."""
        node = parse_program(program) if isinstance(program, str) else program
        self._walker.built_from = tuple(actions)
        try:
            return render(self._walker.answer(node))
        except NoAnswer as u:
            return Undefined(str(u))
        finally:
            self._walker.built_from = ()

    def window_frames(self, window: Node | str) -> "list[int] | Undefined":
        """A window's keyframes (Charades frame numbers, ascending), or Undefined when the window
        is not offered on this video."""
        node = parse_program(window) if isinstance(window, str) else window
        try:
            w = self._walker.window(node)
        except NoAnswer as u:
            return Undefined(str(u))
        return [self.video.frame_ids[f] for f in w.frames]

    def compare_frames(self, action: Node | str) -> "tuple[list[int], list[int], list[int]] | Undefined":
        """(before, during, after) keyframes (frame numbers) of the compare windows around an action
        (§a.2, the ``compare_windows`` twin), or Undefined when they are not defined on this video."""
        node = parse_program(action) if isinstance(action, str) else action
        try:
            sides = twin("compare_windows")(self.video, self.semantics, self._walker.action(node))
        except NoAnswer as u:
            return Undefined(str(u))
        return tuple([self.video.frame_ids[f] for f in side] for side in sides)


def run_program(program: Node | str, source, video_id: str | None = None,
                semantics: Semantics | str = AGQA, actions=()) -> "str | Undefined":
    """The released answer of ``program`` (tree or text, no unfilled slots) on one video, or
    :class:`Undefined` with the reason. source: a ``SceneStore``, ``SceneBatch``, ``VideoScene`` or
    {video_id: VideoScene}; actions: see :func:`.semantics.resolve_to_action` (``built_from``)."""
    return VideoExecutor(scene_of(source, video_id), semantics).run(program, actions)


def localize_frames(window: Node | str, source, video_id: str | None = None,
                    semantics: Semantics | str = AGQA) -> "list[int] | Undefined":
    """The keyframes (Charades frame numbers, ascending) of a window: ``video``,
    ``Localize(before|after|while, X)`` or ``Localize(between, [X, Y])``; Undefined when the window
    is not offered on this video."""
    return VideoExecutor(scene_of(source, video_id), semantics).window_frames(window)
