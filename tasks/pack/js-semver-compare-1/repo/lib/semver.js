/**
 * Semantic Versioning 2.0.0: parse, compare, sort.
 * Precedence follows https://semver.org/#spec-item-11; build metadata is ignored.
 */

const PATTERN =
  /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$/;

export function parse(version) {
  const match = PATTERN.exec(String(version).trim());
  if (!match) throw new TypeError(`Invalid version: ${version}`);
  const [, major, minor, patch, prerelease, build] = match;
  return {
    major: Number(major),
    minor: Number(minor),
    patch: Number(patch),
    prerelease: prerelease ? prerelease.split('.') : [],
    build: build ? build.split('.') : [],
  };
}

export function isValid(version) {
  return PATTERN.test(String(version).trim());
}

function compareNumbers(a, b) {
  return a === b ? 0 : a < b ? -1 : 1;
}

function comparePrerelease(a, b) {
  // A version without a prerelease has higher precedence than one with.
  if (a.length === 0 || b.length === 0) return compareNumbers(b.length, a.length);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] === undefined) return -1;
    if (b[i] === undefined) return 1;
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

export function compare(a, b) {
  const va = typeof a === 'string' ? parse(a) : a;
  const vb = typeof b === 'string' ? parse(b) : b;
  return (
    compareNumbers(va.major, vb.major) ||
    compareNumbers(va.minor, vb.minor) ||
    compareNumbers(va.patch, vb.patch) ||
    comparePrerelease(va.prerelease, vb.prerelease)
  );
}

export const gt = (a, b) => compare(a, b) > 0;
export const lt = (a, b) => compare(a, b) < 0;
export const eq = (a, b) => compare(a, b) === 0;

/** A sorted copy, lowest first. */
export function sort(versions) {
  return [...versions].sort(compare);
}

export function maxVersion(versions) {
  return versions.reduce((best, v) => (best === undefined || gt(v, best) ? v : best), undefined);
}
