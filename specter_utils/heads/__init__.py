"""Classification heads on paper embeddings (the SPECTROID extension), beside SCIDOCS's linear SVM.

* :mod:`specter_utils.heads.frozen`: heads (and the SVM) trained on fixed embeddings, the tables;
* :mod:`specter_utils.heads.end_to_end`: the encoder fine-tuned through a head by the transformers ``Trainer``.
"""

from specter_utils.heads.end_to_end import (
    EndToEndResult,
    EndToEndRun,
    cap_splits,
    paper_texts,
    save_encoder,
    save_head,
    stratified_cap,
    train_end_to_end,
)
from specter_utils.heads.frozen import (
    SVM_HEAD,
    MLPHead,
    architecture_name,
    build_head,
    check_classification_splits,
    classification_scores,
    compare_heads,
    compare_heads_on_task,
    frozen_heads,
    frozen_settings,
    head_seeds,
    parse_architecture,
    prediction_columns,
    read_task_splits,
    split_rows,
    standardization,
    svm_protocol_variants,
    svm_scores,
    train_mlp_head,
    without_predictions,
)

__all__ = [
    "SVM_HEAD",
    "EndToEndResult",
    "EndToEndRun",
    "MLPHead",
    "architecture_name",
    "build_head",
    "cap_splits",
    "check_classification_splits",
    "classification_scores",
    "compare_heads",
    "compare_heads_on_task",
    "frozen_heads",
    "frozen_settings",
    "head_seeds",
    "paper_texts",
    "parse_architecture",
    "prediction_columns",
    "read_task_splits",
    "save_encoder",
    "save_head",
    "split_rows",
    "standardization",
    "stratified_cap",
    "svm_protocol_variants",
    "svm_scores",
    "train_end_to_end",
    "train_mlp_head",
    "without_predictions",
]
