"""What a frame and a clip are: the frame format, clips (segments) of frames and their packing, and cutting each
env's steps into clips of one episode."""
