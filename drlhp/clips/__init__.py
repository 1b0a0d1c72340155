"""The data every process shares: what a frame looks like, and clips (segments) of frames."""
