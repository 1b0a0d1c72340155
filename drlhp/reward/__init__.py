"""The reward model: the network (an ensemble) and its fast forward pass, the normaliser, bootstrap resamples,
augmentation, one training step, and the learner that trains for N steps and writes checkpoints. No process
code: ``drlhp.runtime.trainer_process`` runs the learner in its process, ``drlhp train-reward`` in yours."""
