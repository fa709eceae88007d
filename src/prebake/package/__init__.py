"""Packaging: deterministic ``tar.xz`` assets with manifest, CMake and pkg-config files."""

# What an asset holds for given inputs: bump when packaging adds, drops or changes what goes
# into an asset (manifest fields, generated CMake/pkg-config/SBOM files, layout). It is an input
# of every unit's hash, so assets made by an older packager are rebuilt instead of being skipped
# as "built" while lacking what the current one ships.
# 2: provenance, SBOM and the guards record in every asset.
# 3: relocated install files (.pc, CMake, no .la), build folders mapped out of objects, the
#    version proof in the guards record, upstream CMake packages kept beside <name>::<name>.
# 4: each binary's producer in the facts (abi.producer), the producer rule's guards record.
ASSET_FORMAT = 4
