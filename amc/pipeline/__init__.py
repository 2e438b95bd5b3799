"""The MLOps pipeline: collect -> dataset -> train -> evaluate -> promote -> report.

One module per stage (:mod:`.collect`, :mod:`.dataset`, :mod:`.train`, :mod:`.evaluate`,
:mod:`.promote`, :mod:`.report`), each with one entry ``run(params)`` that does the stage's work
inside an MLflow run (:mod:`.lineage`). Every stage reads its own section of ``params.yaml``
through one loader (:func:`.params.load_params`). ``dvc.yaml`` runs them as
``python -m amc.pipeline.<stage>``; ``amc <stage>`` (:mod:`amc.cli.pipeline`) and the Prefect
flows in ``flows/`` call the same ``run`` functions.
"""
