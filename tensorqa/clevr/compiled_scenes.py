"""The scene part of each questions-JSON record, compiled (numba, CPU): '"split":..,"image_filename":..,
"image_index":..,"image":..,' per scene, from orjson's arrays or straight from the store's bytes."""

from __future__ import annotations

import numpy as np
from numba import njit

from tensorqa.clevr.compiled_bytes import B_IMAGE, B_IMAGE_FILENAME, B_IMAGE_INDEX, B_SPLIT, put_bytes, put_int, put_range


@njit(cache=True)
def json_string_items(arr):
    """(start, stop) of each string, quotes included, in a compact JSON array of strings (orjson's
    output of a list of str)."""
    n = 0
    for i in range(arr.shape[0]):  # an upper bound on the items: the quotes
        n += arr[i] == 34
    se = np.zeros((n // 2 + 1, 2), np.int64)
    k, i = 0, 1
    while i < arr.shape[0] and arr[i] == 34:
        j = i + 1
        while arr[j] != 34:
            j += 2 if arr[j] == 92 else 1  # a backslash escapes the next byte
        se[k, 0], se[k, 1] = i, j + 1
        k += 1
        i = j + 2  # past '",'
    return se[:k]


@njit(cache=True, nogil=True)
def scene_pieces(splits_json, names_json, image_indices):
    """Each scene's '"split":..,"image_filename":..,"image_index":..,"image":..,' as (bytes,
    offsets), from orjson's arrays of the splits and the image file names. "image" is the name up to
    its last '.', cut in the escaped text (no JSON escape holds a '.', no UTF-8 sequence a 0x2E)."""
    sp, nm = json_string_items(splits_json), json_string_items(names_json)
    S = image_indices.shape[0]
    out = np.empty(splits_json.shape[0] + 2 * names_json.shape[0] + S * 80 + 64, np.uint8)
    off = np.zeros(S + 1, np.int64)
    at = 0
    for s in range(S):
        at = put_bytes(out, at, B_SPLIT)
        at = put_range(out, at, splits_json, sp[s, 0], sp[s, 1])
        at = put_bytes(out, at, B_IMAGE_FILENAME)
        a, z = nm[s, 0], nm[s, 1]
        at = put_range(out, at, names_json, a, z)
        at = put_bytes(out, at, B_IMAGE_INDEX)
        at = put_int(out, at, image_indices[s])
        at = put_bytes(out, at, B_IMAGE)
        dot = z - 1
        while dot > a and names_json[dot] != 46:
            dot -= 1
        if dot > a:
            at = put_range(out, at, names_json, a, dot)
            out[at] = 34
            at += 1
        else:
            at = put_range(out, at, names_json, a, z)
        out[at] = 44
        at += 1
        off[s + 1] = at
    return out[:at], off


@njit(cache=True, nogil=True)
def _stored_string(flat, a, W, out, at):
    """'"' + the fixed-width stored string at flat[a:a + W] (up to its NUL padding) + '"' into out,
    or -1 where a byte is not plain printable ASCII without '"' and '\\' (those go through orjson)."""
    n = W
    while n > 0 and flat[a + n - 1] == 0:
        n -= 1
    for i in range(a, a + n):
        c = flat[i]
        if c < 32 or c > 126 or c == 34 or c == 92:
            return -1
    out[at] = 34
    at = put_range(out, at + 1, flat, a, a + n)
    out[at] = 34
    return at + 1


@njit(cache=True, nogil=True)
def stored_scene_pieces(splits, W1, names, W2, image_indices):
    """:func:`scene_pieces` from the store's fixed-width bytes (``splits`` uint8[S * W1], ``names``
    uint8[S * W2]), where every string is plain printable ASCII without '"' and '\\' (its JSON is
    itself in quotes): (bytes, offsets, True), else (.., .., False) and the caller takes orjson's way."""
    S = image_indices.shape[0]
    out = np.empty(S * (W1 + 2 * W2 + 100) + 64, np.uint8)
    off = np.zeros(S + 1, np.int64)
    at = 0
    for s in range(S):
        at = put_bytes(out, at, B_SPLIT)
        at = _stored_string(splits, s * W1, W1, out, at)
        if at < 0:
            return out[:0], off, False
        at = put_bytes(out, at, B_IMAGE_FILENAME)
        a = at
        at = _stored_string(names, s * W2, W2, out, at)
        if at < 0:
            return out[:0], off, False
        z = at
        at = put_bytes(out, at, B_IMAGE_INDEX)
        at = put_int(out, at, image_indices[s])
        at = put_bytes(out, at, B_IMAGE)
        dot = z - 1
        while dot > a and out[dot] != 46:
            dot -= 1
        stop = dot if dot > a else z - 1
        for i in range(a, stop):  # the name up to its last '.', in quotes
            out[at] = out[i]
            at += 1
        out[at] = 34
        out[at + 1] = 44
        at += 2
        off[s + 1] = at
    return out[:at], off, True
