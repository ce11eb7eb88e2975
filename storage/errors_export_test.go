package storage

// TranslateOwn exposes translateOwn to the external test package.
var TranslateOwn = translateOwn
