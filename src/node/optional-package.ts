/**
 * A feature was configured or asked for, but the optional package it needs is not installed
 * (package.json `optionalDependencies` and `peerDependencies`; docs/dependencies.md).
 */
export class MissingPackageError extends Error {
  constructor(
    readonly packageName: string,
    readonly feature: string,
  ) {
    super(`${feature} needs the package ${packageName}, which is not installed: run \`npm install ${packageName}\``);
    this.name = 'MissingPackageError';
  }
}

/**
 * Runs `load` (a dynamic `import()` of the optional package, or of our module that imports it)
 * and turns "that package is not installed" into a MissingPackageError naming it and the
 * feature that wanted it. Any other failure, a broken install included, is thrown as it was.
 * `load` is a function rather than a name so that TypeScript types what it loads.
 */
export async function importOptional<T>(packageName: string, feature: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isMissing(error, packageName)) throw new MissingPackageError(packageName, feature);
    throw error;
  }
}

/** Node's ESM resolver says `Cannot find package '<name>' imported from <file>` (ERR_MODULE_NOT_FOUND). */
function isMissing(error: unknown, packageName: string): boolean {
  return (
    error instanceof Error &&
    (error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' &&
    error.message.includes(`'${packageName}'`)
  );
}
