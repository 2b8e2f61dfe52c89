import pytest
from prunesim.model.spans import Span
from prunesim.model.window import Window


def span(i, tokens, kind="tool_output"):
    return Span(id=i, kind=kind, tokens=tokens, turn=1)


def test_append_and_remove_keep_totals():
    w = Window(size=1000, budget=800, hard=True)
    w.append(span(1, 300))
    w.append(span(2, 200))
    assert w.utilization == 500
    w.remove(1)
    assert w.utilization == 200
    assert w.appended_total - w.removed_total == w.utilization
    assert [s.id for s in w.spans()] == [2]


def test_hard_budget_cuts_the_append_to_fit():
    w = Window(size=1000, budget=800, hard=True)
    w.append(span(1, 700))
    out = w.append(span(2, 300))
    assert (out.kept, out.cut) == (100, 200)
    assert w.utilization == 800


def test_full_hard_window_keeps_nothing_of_the_append():
    w = Window(size=1000, budget=500, hard=True)
    w.append(span(1, 500))
    out = w.append(span(2, 50))
    assert (out.kept, out.cut) == (0, 50)
    assert 2 not in w


def test_soft_budget_overflows_up_to_the_window():
    w = Window(size=1000, budget=800, hard=False)
    w.append(span(1, 700))
    out = w.append(span(2, 250))
    assert (out.kept, out.cut, out.over_budget) == (250, 0, 150)
    out = w.append(span(3, 100))
    assert (out.kept, out.cut) == (50, 50)
    assert w.utilization == 1000


def test_shrink_removes_only_the_cut():
    w = Window(size=1000, budget=800, hard=True)
    w.append(span(1, 400))
    assert w.shrink(1, 100) == 300
    assert w.get(1).tokens == 100
    assert w.utilization == 100
    assert w.shrink(1, 0) == 100
    assert len(w) == 0


def test_the_by_id_mapping_is_read_only_and_follows_the_window_through_an_insert():
    w = Window(size=1000, budget=800, hard=True)
    w.append(span(1, 100))
    w.append(span(3, 100))
    by_id = w.by_id()
    w.insert(span(2, 50), 1)  # an insert rebuilds the order: the mapping handed out before must see it
    w.remove(1)
    assert list(by_id) == [2, 3] and by_id[2].tokens == 50
    assert [s.id for s in w.spans()] == [2, 3]
    with pytest.raises(TypeError):
        by_id[4] = span(4, 10)


def test_the_spans_it_hands_out_cannot_be_reordered_under_it():
    w = Window(size=1000, budget=800, hard=True)
    for i in (1, 2, 3):
        w.append(span(i, 100))
    for shared in (w.spans(), w.unpinned()):  # the same object until the window changes (a policy's view holds it)
        with pytest.raises(AttributeError):
            shared.reverse()
    assert [s.id for s in w.unpinned()] == [1, 2, 3]  # what a forced drop walks, oldest first
