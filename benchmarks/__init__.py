"""drlhp's measurements, by kind, each run from the repository's root as a module
(``python -m benchmarks.<kind>.<name> --help``):

- ``speed/``: what drlhp costs (overheads, throughputs, memory), each as a ratio against a baseline measured in the
  same run.
- ``experiments/``: what a setting or a teacher does to what is learnt (learning curves, offline measures of labels
  and rewards, labelling pace, faults).
- ``report/``: the run records and the results pages generated from them.

The modules here are what the kinds share: the measured envs, the examples' path, MovingDot's clips, a virtual
desktop. docs/benchmarks.md has each measurement's figures and command.
"""
