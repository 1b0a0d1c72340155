"""What your RL code touches (main process): the single-env, gymnasium vector and SB3 wrappers."""
