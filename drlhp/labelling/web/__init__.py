"""People label in their browsers: the page's server, the pairs out with them, clip sprites, the static page."""
