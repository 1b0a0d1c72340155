"""The run records (``run_records``) and the results pages generated from them (``results_report``)."""
