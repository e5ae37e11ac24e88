"""Looking at a benchmark: a video's timeline with a question's grounding (``tensorqa show``) and a
pool's distributions beside AGQA's (``tensorqa report``).

Figure *data* (plain dicts and lists, no plotting library) is kept apart from drawing, so that the
data can be checked against the store and the records without matplotlib:

    timeline.timeline_data(scene, record=None) -> dict        bars, ticks, relation grid, window, grounding
    summary.pool_summary(pool) -> dict                         the report's numbers (``tensorqa stats``'s)
    question.find_record(pool, question_id) -> dict            one record of a pool

Drawing needs the ``viz`` extra (matplotlib, Agg backend): ``draw_timeline``, ``draw_report``;
``html`` writes the self-contained pages (images inlined as data URIs, no network at view time).
"""
