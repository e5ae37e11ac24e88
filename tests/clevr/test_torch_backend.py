"""``clevr.torch_backend``: the torch backend's questions, checked against CLEVR's own rules stated
directly (at most ``templates_per_image`` questions a scene, a template once per scene, CLEVR's
answer-count rejection) and each answer against the scalar executor on the scene's JSON."""

from __future__ import annotations

import collections
import json

import pytest

from tensorqa.clevr import columns
from tensorqa.clevr.generate import Options
from tensorqa.clevr.scalar import INVALID, run_program
from tensorqa.clevr.templates import DEFAULT_SYNONYMS, DEFAULT_TEMPLATES_DIR, load_synonyms, load_templates
from tensorqa.clevr.torch_backend import generate_columns
from tensorqa.scenes.clevr_sampler import sample_scenes
from tensorqa.scenes.static_store import StaticStore, write_static_store


@pytest.mark.parametrize("per_image", [3, 10])
def test_questions_follow_clevrs_selection_and_execute_to_their_answers(tmp_path, per_image):
    scenes = sample_scenes(30, seed=6)
    store = write_static_store(tmp_path / "s.h5", scenes)
    opt = Options(templates_per_image=per_image, batch_scenes=8, seed=2)
    with StaticStore(store) as st:
        qs = columns.as_dicts(generate_columns(st, load_templates(DEFAULT_TEMPLATES_DIR),
                                               load_synonyms(DEFAULT_SYNONYMS), opt))
    per_scene = collections.Counter(q["image_index"] for q in qs)
    assert max(per_scene.values()) <= per_image and len(per_scene) == len(scenes)
    families = collections.Counter((q["image_index"], q["template_filename"], q["question_family_index"]) for q in qs)
    assert max(families.values()) == 1  # instances_per_template = 1
    by_index = {s.to_json()["image_index"]: s.to_json() for s in scenes}
    for q in qs:
        program = json.loads(q["program"]) if isinstance(q["program"], str) else q["program"]
        answer = run_program(program, by_index[q["image_index"]])
        assert answer != INVALID and answer == q["answer"], q  # CLEVR's raw answers: bool, int, str
