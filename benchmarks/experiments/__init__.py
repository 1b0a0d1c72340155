"""What a setting or a teacher does to what is learnt: learning curves, offline measures, labelling pace, faults."""
