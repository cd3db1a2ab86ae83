"""One build recipe per library; `recipe_for` picks it for a variant."""

from __future__ import annotations

from tlsbench.recipes.base import Recipe
from tlsbench.recipes.gnutls import GnutlsRecipe
from tlsbench.recipes.mbedtls import MbedtlsRecipe
from tlsbench.recipes.openssl import OpensslRecipe
from tlsbench.recipes.system import SystemRecipe
from tlsbench.recipes.wolfssl import WolfsslRecipe
from tlsbench.variants import Variant

RECIPES: dict[str, Recipe] = {
    "mbedtls": MbedtlsRecipe(),
    "wolfssl": WolfsslRecipe(),
    "openssl": OpensslRecipe(),
    "gnutls": GnutlsRecipe(),
}


def recipe_for(variant: Variant) -> Recipe:
    if variant.line.pin is None:
        return SystemRecipe(variant.library)
    return RECIPES[variant.line.library.recipe]
