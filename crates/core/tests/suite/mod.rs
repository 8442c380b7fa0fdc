mod runtime;
