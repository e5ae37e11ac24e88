"""One caption/foil pair, as the generators make it and the records write it."""

from __future__ import annotations

from dataclasses import dataclass, field

from tensorqa.foils import programs as P


@dataclass
class Pair:
    id: str
    instrument: str
    phenomenon: str
    video_id: str
    split: str
    caption: str
    foil: str
    caption_text: P.Text
    foil_text: P.Text
    classes: object
    classes_foil: object
    foil_method: str
    keyframes: list = field(default_factory=list)
    objects: list = field(default_factory=list)  # names (video) / descriptions (static) of the objects
    object_indices: list = field(default_factory=list)  # static scenes: the objects' indices in the scene
    scene_kind: str = "video"  # "video" or "static"
    media_file: str = ""  # the video's or image's file name
