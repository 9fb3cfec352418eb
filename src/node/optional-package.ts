/** A feature needs an optional package that is not installed (docs/dependencies.md). */
export class MissingPackageError extends Error {
  constructor(
    readonly packageName: string,
    readonly feature: string,
  ) {
    super(`${feature} needs the package ${packageName}, which is not installed: run \`npm install ${packageName}\``);
    this.name = 'MissingPackageError';
  }
}

/** Runs `load` (a dynamic `import()`, typed) and turns "not installed" into a MissingPackageError; any other failure is rethrown. */
export async function importOptional<T>(packageName: string, feature: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if (isMissing(error, packageName)) throw new MissingPackageError(packageName, feature);
    throw error;
  }
}

/** Node's ESM resolver: ERR_MODULE_NOT_FOUND, `Cannot find package '<name>'`. */
function isMissing(error: unknown, packageName: string): boolean {
  return (
    error instanceof Error && (error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && error.message.includes(`'${packageName}'`)
  );
}
