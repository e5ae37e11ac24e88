"""AGQA templates as data: metadata, question frames, reference and localization phrases."""

from tensorqa.agqa.templates.catalogue import (
    ACTION_REFERENCE_FRAMES, ACTIVE_TEMPLATES, FRAME_SLOTS, OBJECT_REFERENCE_FRAMES, TEMPLATES, WINDOW_FRAMES,
    TemplateSpec, check_frame, template_spec)

__all__ = ["ACTION_REFERENCE_FRAMES", "ACTIVE_TEMPLATES", "FRAME_SLOTS", "OBJECT_REFERENCE_FRAMES", "TEMPLATES",
           "WINDOW_FRAMES", "TemplateSpec", "check_frame", "template_spec"]
