"""Load tests of the gateway, by role.

- ``sim/``: the backend simulator (``python -m loadtests.sim``);
- ``loadgen/``: the open-loop load generator (``python -m loadtests.loadgen``), over the YAML
  workloads of ``workloads/``;
- ``real/``: real inference servers on this CPU (``python -m loadtests.real``);
- ``kit/``: what the benchmarks share with ``tests/``: servers, ports, child processes, data
  loaders, written data sets, embeddings kept on disk;
- one folder per benchmark, run as ``python -m loadtests.<name>`` (its ``cli.py``), writing
  under its own ``results/``: the figures of record, and each run's files in ``results/out/``
  (git-ignored);
- ``fit/``: the commands that fit what the gateway ships (``python -m loadtests.fit.<name>``).
"""
