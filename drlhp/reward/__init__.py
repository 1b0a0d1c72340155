"""The reward-training process: the reward network and its fast forward pass, the preference database,
the training loop, the normaliser, bootstrap resamples and augmentation."""
