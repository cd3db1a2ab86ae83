"""One build recipe per library; `recipe_for` picks it for a variant."""

from __future__ import annotations

from tlsbench.recipes.awslc import AwslcRecipe
from tlsbench.recipes.base import BuildContext, LinkInfo, Recipe
from tlsbench.recipes.bearssl import BearsslRecipe
from tlsbench.recipes.boringssl import BoringsslRecipe
from tlsbench.recipes.gnutls import GnutlsRecipe
from tlsbench.recipes.hacl import HaclRecipe
from tlsbench.recipes.mbedtls import MbedtlsRecipe
from tlsbench.recipes.nss import NssRecipe
from tlsbench.recipes.openssl import OpensslRecipe
from tlsbench.recipes.rustls import RustlsRecipe
from tlsbench.recipes.system import SystemRecipe
from tlsbench.recipes.wolfssl import WolfsslRecipe
from tlsbench.variants import Variant

RECIPES: dict[str, Recipe] = {
    "mbedtls": MbedtlsRecipe(),
    "wolfssl": WolfsslRecipe(),
    "openssl": OpensslRecipe(),
    "gnutls": GnutlsRecipe(),
    "hacl": HaclRecipe(),
    "awslc": AwslcRecipe(),
    "boringssl": BoringsslRecipe(),
    "rustls": RustlsRecipe(),
    "bearssl": BearsslRecipe(),
    "nss": NssRecipe(),
}


def recipe_for(variant: Variant) -> Recipe:
    if variant.line.library.recipe == "null":
        return NullRecipe()
    if not variant.line.from_source:
        return SystemRecipe(variant.library)
    return RECIPES[variant.line.library.recipe]


class NullRecipe:
    """The harness baseline: no library to build, the driver links only itself."""

    library = "null"

    def key_inputs(self, variant: Variant) -> dict[str, str]:
        return {}

    def build(self, ctx: BuildContext) -> LinkInfo:
        return LinkInfo()
