"""The main process's side: cutting clips, sending them to the interface through shared memory, starting and
watching the two workers, the messages between the processes, and loading each new checkpoint."""
