"""Who is asked what: the interface (which pair to ask about, and when), the label schedule, pair selection by
the ensemble's disagreement, and the labellers (synthetic, window + terminal, the web page). No process code:
``drlhp.runtime.interface_process`` runs the interface in its process."""
