"""Charades CSV reader: the real annotation files and hand-written files in the same layout."""


import pytest

from tensorqa import TensorQAError
from tensorqa.scenes.loaders import CharadesVideo, read_charades_csv
HEADER = "id,subject,scene,quality,relevance,verified,script,objects,descriptions,actions,length\n"


def write(tmp_path, name, *rows, header=HEADER):
    path = tmp_path / name
    path.write_text(header + "".join(r + "\n" for r in rows))
    return path


# -- the real files ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def train_csv(shared_data):
    return shared_data / "charades" / "Charades_v1_train.csv"


@pytest.fixture(scope="module")
def real(shared_data, train_csv):
    return read_charades_csv([train_csv, shared_data / "charades" / "Charades_v1_test.csv"])


def test_real_counts(real):
    # counts published with the copied files (reference §2.2)
    train = [v for v in real if v.split == "train"]
    test = [v for v in real if v.split == "test"]
    assert (len(real), sum(len(v.actions) for v in real)) == (9848, 66500)
    assert (len(train), sum(len(v.actions) for v in train)) == (7985, 49809)
    assert (len(test), sum(len(v.actions) for v in test)) == (1863, 16691)
    assert len({v.video_id for v in real}) == 9848


def test_real_rows(real):
    by_id = {v.video_id: v for v in real}
    # first train row: "...,food;stove;window,...,c092 11.90 21.20;c147 0.00 12.60,24.83"
    # c147 starts first, so it comes first
    assert by_id["46GP8"] == CharadesVideo(
        "46GP8", "train", 24.83, ("food", "stove", "window"), "Kitchen",
        ((147, 0.0, 12.6), (92, 11.9, 21.2)))
    # first test row: its description field is quoted and holds commas;
    # actions c077 12.10 18.00;c079 11.80 17.30;c080 13.00 18.00;c076 11.80 17.50;c075 5.40 14.10
    # ordered by start, then end (c079 and c076 both start at 11.8; c079 ends first)
    yskx3 = by_id["YSKX3"]
    assert (yskx3.split, yskx3.length_secs, yskx3.scene) == ("test", 16.62, "Bedroom")
    assert yskx3.objects == ("bed", "blanket", "mattress", "pillow")
    assert yskx3.actions == ((75, 5.4, 14.1), (79, 11.8, 17.3), (76, 11.8, 17.5), (77, 12.1, 18.0), (80, 13.0, 18.0))


def test_real_reversed_intervals(train_csv):
    # 00SL4 (length 8.96 s) lists "c071 18.00 10.00;c081 18.00 10.00": end before start.
    # The train file has 7 such entries (00SL4 x2, AKKWU, IOL8Q x2, LEOL6 x2).
    swapped = {v.video_id: v for v in read_charades_csv(train_csv)}
    assert (71, 10.0, 18.0) in swapped["00SL4"].actions and (81, 10.0, 18.0) in swapped["00SL4"].actions
    dropped = read_charades_csv(train_csv, reversed_intervals="drop")
    assert sum(len(v.actions) for v in dropped) == 49809 - 7
    line = next(i for i, text in enumerate(train_csv.read_text().splitlines(), 1) if text.startswith("00SL4,"))
    with pytest.raises(TensorQAError, match=rf"Charades_v1_train\.csv:{line}: .*'c071 18\.00 10\.00' ends before"):
        read_charades_csv(train_csv, reversed_intervals="error")


# -- hand-written files in the real layout ---------------------------------------------------------------


def test_small_file_quoting_sorting_and_empty_fields(tmp_path):
    path = write(
        tmp_path, "Charades_mini_train.csv",
        # quoted script and description holding commas; three intervals tie-broken by end then class
        'AAAAA,S1,Kitchen,6,7,Yes,"A person cooks, then eats.",food;stove,"They cook, eat, and leave.",'
        "c065 2.00 5.00;c061 1.00 4.00;c062 1.00 3.00;c063 1.00 3.00,12.50",
        # empty objects and empty actions: no intervals
        "BBBBB,S2,Bedroom,5,5,No,Nothing happens.,,Nothing.,,7.00",
        # a multi-line quoted description
        'CCCCC,S3,"Living room, small",,,Yes,"Line one\nline two, still one field",chair,"desc",c059 0.50 1.50,3.25',
    )
    videos = read_charades_csv(path)
    assert [v.video_id for v in videos] == ["AAAAA", "BBBBB", "CCCCC"]
    a, b, c = videos
    # (start, end, class): (1,3,62) < (1,3,63) < (1,4,61) < (2,5,65)
    assert a.actions == ((62, 1.0, 3.0), (63, 1.0, 3.0), (61, 1.0, 4.0), (65, 2.0, 5.0))
    assert a.objects == ("food", "stove") and a.length_secs == 12.5 and a.split == "train"
    assert b.actions == () and b.objects == () and b.length_secs == 7.0
    assert c.scene == "Living room, small" and c.actions == ((59, 0.5, 1.5),)


def test_split_from_name_or_argument(tmp_path):
    row = "AAAAA,S,K,,,,,,,c000 0.0 1.0,2.0"
    assert read_charades_csv(write(tmp_path, "x_test.csv", row))[0].split == "test"
    plain = write(tmp_path, "plain.csv", row)
    assert read_charades_csv(plain, split="test")[0].split == "test"
    with pytest.raises(TensorQAError, match=r"plain\.csv: cannot tell the split"):
        read_charades_csv(plain)
    with pytest.raises(TensorQAError, match=r"plain\.csv: split must be"):
        read_charades_csv(plain, split="val")


def test_several_files_keep_their_own_split(tmp_path):
    tr = write(tmp_path, "a_train.csv", "AAAAA,S,K,,,,,,,,1.0")
    te = write(tmp_path, "a_test.csv", "BBBBB,S,K,,,,,,,,1.0")
    assert [(v.video_id, v.split) for v in read_charades_csv([tr, te])] == [("AAAAA", "train"), ("BBBBB", "test")]


GOOD = "AAAAA,S,K,,,,,,,c000 0.0 1.0,2.0"


@pytest.mark.parametrize(
    "rows, line, problem",
    [
        # line 1 is the header; the bad row is on line 3
        ([GOOD, "BBBBB,S,K,,,,,,,c000 1.0,2.0"], 3, r"action entry 'c000 1\.0' is not 'cNNN start end'"),
        ([GOOD, "BBBBB,S,K,,,,,,,x000 1.0 2.0,2.0"], 3, r"action entry 'x000 1\.0 2\.0' is not"),
        ([GOOD, "BBBBB,S,K,,,,,,,c000 a b,2.0"], 3, r"non-numeric time"),
        ([GOOD, "BBBBB,S,K,,,,,,,c157 1.0 2.0,2.0"], 3, r"unknown action class 'c157'"),
        ([GOOD, "BBBBB,S,K,,,,,,,c000 2.0 1.0,2.0"], 3, r"'c000 2\.0 1\.0' ends before it starts"),
        ([GOOD, "BBBBB,S,K,,,,,,,,long"], 3, r"length 'long' is not a number"),
        ([GOOD, "AAAAA,S,K,,,,,,,,1.0"], 3, r"video 'AAAAA' already read at .*:2"),
        ([GOOD, "BBBBB,S,K,,,,,,c000 0.0 1.0,2.0"], 3, r"10 fields, header has 11"),
        # a quoted field spanning lines 2-3 pushes the bad row to line 4
        (['AAAAA,S,K,,,,"two\nlines",,,,2.0', "BBBBB,S,K,,,,,,,c000 2.0 1.0,2.0"], 4, r"ends before"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path, rows, line, problem):
    path = write(tmp_path, "bad_train.csv", *rows)
    with pytest.raises(TensorQAError, match=rf"bad_train\.csv:{line}: .*{problem}") as info:
        read_charades_csv(path, reversed_intervals="error")
    assert "\n" not in str(info.value)


def test_missing_file_and_missing_columns(tmp_path):
    with pytest.raises(TensorQAError, match=r"nope_train\.csv: cannot open Charades CSV"):
        read_charades_csv(tmp_path / "nope_train.csv")
    path = write(tmp_path, "cols_train.csv", "AAAAA,S,K", header="id,subject,scene\n")
    with pytest.raises(TensorQAError, match=r"cols_train\.csv:1: missing column\(s\) actions, length"):
        read_charades_csv(path)
    empty = tmp_path / "empty_train.csv"
    empty.write_text("")
    with pytest.raises(TensorQAError, match=r"empty_train\.csv: empty file"):
        read_charades_csv(empty)
    with pytest.raises(TensorQAError, match="reversed_intervals"):
        read_charades_csv(path, reversed_intervals="flip")
