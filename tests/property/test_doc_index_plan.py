"""The region a document change re-indexes, found from the texts alone
(`rules.doc_index_work.plan_index`), is exactly what the stores replace: the old blocks
outside it, moved by the change in line count, plus the plan's new blocks, are the new
content's blocks; and the region's edges are the edges of blocks in both contents."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sqlmem.rules.doc_blocks import Block, split_blocks
from sqlmem.rules.doc_index_work import plan_index

lines = st.lists(st.sampled_from(["", " ", "a", "b c", "\r", "é", "x y z", "\t"]), max_size=14)


@settings(max_examples=400, deadline=None)
@given(old=lines, new=lines)
def test_the_plan_turns_the_old_blocks_into_the_new_ones(old: list[str], new: list[str]) -> None:
    old_text, new_text = "\n".join(old), "\n".join(new)
    if old_text == new_text:
        return
    plan = plan_index(old_text, new_text)
    kept = []
    for block in split_blocks(old_text):
        if block.end_line < plan.first:
            kept.append(block)
        elif block.start_line > plan.old_last:
            kept.append(
                Block(block.start_line + plan.delta, block.end_line + plan.delta, block.text)
            )
        else:  # overlapping the region: must lie inside it
            assert plan.first <= block.start_line and block.end_line <= plan.old_last
    assert sorted(kept + plan.blocks) == split_blocks(new_text)


@given(new=lines)
def test_a_new_document_plans_all_its_blocks(new: list[str]) -> None:
    text = "\n".join(new)
    assert plan_index(None, text).blocks == split_blocks(text)
