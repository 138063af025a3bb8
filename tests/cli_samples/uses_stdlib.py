"""Calls a pure-Python standard library function, for --all / --skip-stdlib."""

import colorsys


def brightness(red, green, blue):
    return colorsys.rgb_to_hsv(red, green, blue)[2]


print("brightness", brightness(0.2, 0.4, 0.6))
