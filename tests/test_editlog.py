"""The edit log: append-only, hash-chained, and verify() catches every kind of tampering."""

import dataclasses

import pytest
from prunesim.io.scenario_files import load
from prunesim.model.editlog import GENESIS, EditLog, Record, content_hash, verify_records
from prunesim.runner import run_one


def small_log(n=5) -> EditLog:
    log = EditLog()
    for i in range(n):
        log.append("evict", turn=i, span_id=100 + i, key=f"cmd-{i}", tokens=10 * (i + 1), reason="judged stale")
    return log


def test_chain_links_and_verifies():
    log = small_log()
    records = log.records
    assert records[0].prev == GENESIS
    assert all(b.prev == a.hash for a, b in zip(records, records[1:], strict=False))
    assert [r.seq for r in records] == [1, 2, 3, 4, 5]
    assert log.verify(log.anchor()).ok


def test_editing_a_record_is_caught():
    records = list(small_log().records)
    body = dict(records[2].body, tokens=9999)
    records[2] = dataclasses.replace(records[2], body=body)
    v = verify_records(records)
    assert not v.ok and v.bad_seq == 3 and "hash" in v.problem


def test_editing_and_rehashing_a_record_breaks_the_next_link():
    log = small_log()
    records = list(log.records)
    forged = EditLog()
    for r in records[:2]:
        forged.append(**r.body)
    forged.append(**dict(records[2].body, reason="never pruned"))  # rehashed properly
    tampered = [*forged.records, *records[3:]]
    v = verify_records(tampered)
    assert not v.ok and v.bad_seq == 4 and "link" in v.problem


def test_deleting_a_record_is_caught():
    records = list(small_log().records)
    del records[1]
    v = verify_records(records)
    assert not v.ok and v.bad_seq == 2


def test_reordering_records_is_caught():
    records = list(small_log().records)
    records[1], records[3] = records[3], records[1]
    v = verify_records(records)
    assert not v.ok and v.bad_seq == 2


def test_cutting_the_tail_is_caught_by_the_anchor():
    log = small_log()
    anchor = log.anchor()
    cut = list(log.records)[:-1]
    assert verify_records(cut).ok  # the chain alone cannot see a missing tail
    v = verify_records(cut, anchor)
    assert not v.ok and "anchor" in v.problem


def test_records_hold_plain_data_only():
    with pytest.raises(TypeError):
        EditLog().append("evict", span=object())


def test_view_is_read_only():
    view = small_log().view()
    assert len(view.evictions("cmd-2")) == 1
    assert not hasattr(view, "append")
    assert view.verify().ok


def test_content_hash_is_stable():
    assert content_hash("tool_output", "k", 900, 34) == content_hash("tool_output", "k", 900, 34)
    assert content_hash("tool_output", "k", 900, 34) != content_hash("tool_output", "k", 901, 34)


def test_a_real_run_log_verifies_and_tampering_it_is_caught():
    result = run_one(load("reentrancy-60"), "tombstoned", 3, trace="none")
    records = list(result.edit_log)
    assert records and verify_records(records).ok
    evict = next(i for i, r in enumerate(records) if r.kind == "evict")
    edited = list(records)
    edited[evict] = Record(records[evict].seq, dict(records[evict].body, reason="user asked"), records[evict].prev,
                           records[evict].hash)
    assert not verify_records(edited).ok
    assert not verify_records(records[:evict] + records[evict + 1:]).ok
    assert not verify_records(records[:evict] + [records[evict + 1], records[evict]] + records[evict + 2:]).ok
