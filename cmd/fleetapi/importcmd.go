package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/fleetapi/fleetapi/storage"
)

func runImport(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, fs, err := databaseCommand("import", getenv, stdout)
	if err != nil {
		return err
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("import: want exactly one FILE (- for standard input is not supported)")
	}
	f, err := os.Open(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer f.Close()
	db, err := openDatabase(ctx, *cfg, nil)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := storage.NewStore(db).Import(ctx, f)
	if err != nil {
		return fmt.Errorf("import %s: %w", fs.Arg(0), err)
	}
	fmt.Fprintf(stdout, "imported %s: %s\n", fs.Arg(0), res)
	return nil
}
