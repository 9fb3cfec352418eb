export class MissingPackageError extends Error {
  constructor(packageName: string, feature: string) {
    super(`${feature} needs the package ${packageName}, which is not installed: run \`npm install ${packageName}\``);
    this.name = 'MissingPackageError';
  }
}

export function importOptional<T>(packageName: string, feature: string, load: () => Promise<T>): Promise<T> {
  return load().catch((error: unknown) => {
    const missing =
      error instanceof Error && 'code' in error && error.code === 'ERR_MODULE_NOT_FOUND' && error.message.includes(`'${packageName}'`);
    throw missing ? new MissingPackageError(packageName, feature) : error;
  });
}
