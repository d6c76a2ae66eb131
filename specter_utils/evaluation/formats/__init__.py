"""SciRepEval's four task formats, scored as its evaluator scores them, on a folder of local files.

``tasks.py`` reads ``DIR/tasks.jsonl`` (one declarative :class:`FormatTask` per line) and each task's files;
one evaluator module per format (``classification``, ``regression``, ``proximity``, ``adhoc_search``);
``scoring.py`` runs them and averages each format's main scores (each task's result keeps its per-query scores or
its test papers' predictions); ``paired.py`` compares two models' results task by task; ``convert.py`` turns a
labelled sample (SciRepEval's ``fos_small.json``, ``mesh_small.json``) into a task of the layout."""
