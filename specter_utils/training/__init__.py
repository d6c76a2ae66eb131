"""SPECTER training: data (``data``), losses (``losses``), the trainer entry point (``train.train_specter``), its
process guards under ``torchrun`` (``distributed``), the run folder it writes (``run_folder``), the model card
(``model_card``). Its configuration, ``TrainConfig``, lives with the mining section in ``specter_utils.train_config``."""
