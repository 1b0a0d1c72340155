"""Unmapping and mapping this process's windows again, from outside Qt: the cure for a window that never paints.

OpenCV's bundled Qt (5.15, xcb) sometimes never paints a window it has just shown when the
machine is busy, as it is while an agent trains beside the labelling: the window stays black
for good (on Xvfb with and without a window manager; a bare ``cv2.imshow`` loop shows it, no
drlhp code needed). Showing more pictures, moving, resizing or re-showing the window through
Qt does not repaint it; an X unmap and map of the window does. This sends that pair with
Xlib through ``ctypes``: no dependency, and nothing happens where Xlib or the display is missing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from functools import lru_cache

_IS_VIEWABLE = 2  # XWindowAttributes.map_state


class _WindowAttributes(ctypes.Structure):
    # Xlib's XWindowAttributes, up to map_state (the fields after it are never read, but the
    # structure is allocated whole: Xlib writes all of it).
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int), ("height", ctypes.c_int),
                ("border_width", ctypes.c_int), ("depth", ctypes.c_int), ("visual", ctypes.c_void_p),
                ("root", ctypes.c_ulong), ("class_", ctypes.c_int), ("bit_gravity", ctypes.c_int),
                ("win_gravity", ctypes.c_int), ("backing_store", ctypes.c_int), ("backing_planes", ctypes.c_ulong),
                ("backing_pixel", ctypes.c_ulong), ("save_under", ctypes.c_int), ("colormaps", ctypes.c_ulong),
                ("map_installed", ctypes.c_int), ("map_state", ctypes.c_int), ("rest", ctypes.c_byte * 64)]


@lru_cache(maxsize=1)
def _xlib() -> ctypes.CDLL | None:
    path = ctypes.util.find_library("X11")
    if path is None:
        return None
    x = ctypes.CDLL(path)
    x.XOpenDisplay.restype = ctypes.c_void_p
    x.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x.XDefaultRootWindow.restype = ctypes.c_ulong
    x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
    x.XInternAtom.restype = ctypes.c_ulong
    x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    x.XQueryTree.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong),
                             ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.POINTER(ctypes.c_ulong)),
                             ctypes.POINTER(ctypes.c_uint)]
    x.XGetWindowProperty.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_long, ctypes.c_long,
                                     ctypes.c_int, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong),
                                     ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_ulong),
                                     ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_void_p)]
    x.XGetWindowAttributes.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(_WindowAttributes)]
    x.XFree.argtypes = [ctypes.c_void_p]
    for name in ("XUnmapWindow", "XMapWindow"):
        getattr(x, name).argtypes = [ctypes.c_void_p, ctypes.c_ulong]
    x.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
    x.XCloseDisplay.argtypes = [ctypes.c_void_p]
    return x


def _windows(x: ctypes.CDLL, display: int, window: int):
    """``window`` and every window under it (a window manager puts clients inside its frames)."""
    yield window
    root, parent = ctypes.c_ulong(), ctypes.c_ulong()
    children, n = ctypes.POINTER(ctypes.c_ulong)(), ctypes.c_uint()
    if not x.XQueryTree(display, window, ctypes.byref(root), ctypes.byref(parent), ctypes.byref(children),
                        ctypes.byref(n)):
        return
    ids = [children[i] for i in range(n.value)]
    if children:
        x.XFree(children)
    for child in ids:
        yield from _windows(x, display, child)


def _property(x: ctypes.CDLL, display: int, window: int, atom: int) -> tuple[int, bytes] | None:
    """A window property's format and raw items, or None where it has none (read: 8-bit strings, 32-bit numbers)."""
    actual_type, fmt = ctypes.c_ulong(), ctypes.c_int()
    n, after, data = ctypes.c_ulong(), ctypes.c_ulong(), ctypes.c_void_p()
    if x.XGetWindowProperty(display, window, atom, 0, 256, 0, 0, ctypes.byref(actual_type), ctypes.byref(fmt),
                            ctypes.byref(n), ctypes.byref(after), ctypes.byref(data)) != 0 or not data:
        return None
    try:
        # Format-32 items come back as C longs, whatever their size.
        size = {8: 1, 32: ctypes.sizeof(ctypes.c_long)}.get(fmt.value, 0)
        return fmt.value, ctypes.string_at(data, size * n.value)
    finally:
        x.XFree(data)


def remap_own_window(title: str) -> int:
    """Unmap and map again this process's viewable windows titled ``title``; returns how many there were."""
    if not (sys.platform.startswith("linux") and os.environ.get("DISPLAY")):
        return 0  # OpenCV's Qt draws through X only on Linux
    x = _xlib()
    if x is None:
        return 0
    display = x.XOpenDisplay(None)
    if not display:
        return 0
    try:
        # Qt names its top-level windows in both (UTF-8 title, owning process).
        pid_atom, name_atom = (x.XInternAtom(display, name, 1) for name in (b"_NET_WM_PID", b"_NET_WM_NAME"))
        if not (pid_atom and name_atom):
            return 0
        pid = ctypes.c_long(os.getpid())
        wanted = {pid_atom: (32, bytes(pid)), name_atom: (8, title.encode())}
        mine = []
        for window in _windows(x, display, x.XDefaultRootWindow(display)):
            attributes = _WindowAttributes()
            if (all(_property(x, display, window, atom) == value for atom, value in wanted.items())
                    and x.XGetWindowAttributes(display, window, ctypes.byref(attributes))
                    and attributes.map_state == _IS_VIEWABLE):
                mine.append(window)
        for window in mine:
            x.XUnmapWindow(display, window)
        x.XSync(display, 0)
        for window in mine:
            x.XMapWindow(display, window)
        x.XSync(display, 0)
        return len(mine)
    finally:
        x.XCloseDisplay(display)
