"""The streamed ledger and calls.csv rows: the fast row formatter writes what the csv module writes."""

import csv
import io
import json

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from prunesim.observe.cells import neutral, recover
from prunesim.observe.recorder import Recorder, cell, csv_line, number_row

numbers = st.one_of(st.integers(min_value=-(10**20), max_value=10**20),
                    st.floats(allow_nan=True, allow_infinity=True), st.booleans())


def written_by_csv(row) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([cell(v) for v in row])
    return buf.getvalue()


@given(st.lists(numbers, min_size=1, max_size=25))
def test_a_row_of_ints_floats_and_bools_is_the_csv_modules_line(row):
    assert number_row(tuple(row)) == written_by_csv(row)


def test_floats_are_rounded_to_six_decimals_as_cells_are():
    assert number_row((1, 0.1 + 0.2, 2.5e-7, 7)) == "1,0.3,0.0,7\n"


def test_bools_are_written_as_cells_write_them():
    assert number_row((True, 1, False, 0.5)) == "true,1,false,0.5\n"


def test_other_types_are_left_to_the_cell_by_cell_path():
    for row in ((1, None), (1, "a,b"), (np.int64(3), 1), (np.float64(0.5), 1), (np.bool_(True), 1)):
        assert number_row(row) is None


@given(st.text(max_size=20), st.text(max_size=40), st.integers(min_value=-(10**20), max_value=10**20),
       st.integers(min_value=-(10**20), max_value=10**20), st.booleans())
def test_an_eviction_event_is_the_json_the_encoder_writes(action, reason, spans, freed, fallback):
    recorder = Recorder("none")
    recorder.on_non_model_eviction(1.5, 3, action, reason, spans, freed, fallback)
    (_, _, _, event, detail), = recorder.events
    assert event == ("fallback" if fallback else "non_model_eviction")
    assert detail == json.dumps({"action": action, "reason": reason, "spans": spans, "freed": freed}, sort_keys=True)


@given(st.lists(st.text(max_size=12).filter(lambda t: "\r" not in t), min_size=1, max_size=6))
def test_a_line_without_a_carriage_return_is_the_csv_modules_line(cells):
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([neutral(c) for c in cells])  # cells a spreadsheet never runs
    assert csv_line(cells) == buf.getvalue()


@given(st.lists(st.text(max_size=12), min_size=1, max_size=6))
def test_a_line_reads_back_as_its_cells_whatever_they_hold(cells):
    # A lone "\r" left bare would end the row for a reader: it must be quoted like "\n".
    text = csv_line(["a"] * len(cells)) + csv_line(cells)
    import pandas as pd

    frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    assert len(frame) == 1
    assert list(frame.iloc[0].map(recover)) == cells  # the documented rule undoes the formula guard
