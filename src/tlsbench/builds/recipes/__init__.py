"""One build recipe per library; `recipe_for` picks it for a variant."""

from __future__ import annotations

from tlsbench.builds.recipes.awslc import AwslcRecipe
from tlsbench.builds.recipes.base import BuildContext, LinkInfo, Recipe
from tlsbench.builds.recipes.bearssl import BearsslRecipe
from tlsbench.builds.recipes.boringssl import BoringsslRecipe
from tlsbench.builds.recipes.botan import BotanRecipe
from tlsbench.builds.recipes.gnutls import GnutlsRecipe
from tlsbench.builds.recipes.hacl import HaclRecipe
from tlsbench.builds.recipes.mbedtls import MbedtlsRecipe
from tlsbench.builds.recipes.nss import NssRecipe
from tlsbench.builds.recipes.openssl import OpensslRecipe
from tlsbench.builds.recipes.rustls import RustlsRecipe
from tlsbench.builds.recipes.s2n import S2nRecipe
from tlsbench.builds.recipes.system import SystemRecipe
from tlsbench.builds.recipes.wolfssl import WolfsslRecipe
from tlsbench.builds.variants import Variant

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
    "s2n": S2nRecipe(),
    "nss": NssRecipe(),
    "botan": BotanRecipe(),
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
