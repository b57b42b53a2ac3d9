// Node's fs, plus globSync: Node's own where it exists (Node 22+), else the glob package's.
import fs from 'node:fs';
import { globSync as globPackageSync } from 'glob';

export * from 'node:fs';
export default fs;
export const globSync = fs.globSync ?? globPackageSync;
