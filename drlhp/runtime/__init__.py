"""The only folder that knows processes: the messages and the clip channel between them, each worker's settings
derived from ``PreferenceConfig``, the thin loops of the preference-interface and reward-training processes, and
the ``PreferencePipeline`` that starts, watches and stops them."""
