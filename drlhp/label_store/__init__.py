"""The label store: the labelled pairs (the database and its snapshot files), the journal that holds every label
until a snapshot does, and the stream of labels from the preference interface -- with the labellers' retractions,
second answers and how often they agree (``agreement``). One owner of both file formats."""
