"""The MLOps pipeline: collect -> dataset -> train -> evaluate -> promote -> report.

Each stage is a library function (:mod:`.collect`, :mod:`.evaluate`, :mod:`.promote`,
:mod:`.report`; dataset and training live in :mod:`amc.value`), wrapped with MLflow tracking
in :mod:`.stages`, exposed as ``amc <stage>`` (:mod:`amc.cli.pipeline`), run by ``dvc repro``
(``dvc.yaml``) and by the Prefect flows in ``flows/``. Parameters: :mod:`.params`.
"""
