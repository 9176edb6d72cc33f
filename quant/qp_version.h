/* qp_version.h — qprec's version, defined here and nowhere else.
 *
 * Owns: the release number every part of qprec reports: the CMake project
 * (CMakeLists.txt reads the QP_VERSION line below), qp_version() of this
 * library, every tool's --version, the "version" attribute of a run file
 * (the run file's schema has its own integer, /train's schema_version, which
 * changes only with the layout), and the Python package (its build backend
 * reads this line for the pip version; qprec.__version__ asks the library).
 * Keep the line's form: `#define QP_VERSION "MAJOR.MINOR.PATCH"`. */
#ifndef QP_VERSION_H
#define QP_VERSION_H

#define QP_VERSION "0.4.0"

#ifdef __cplusplus
extern "C" {
#endif

/* QP_VERSION, as the library was built with it. */
const char *qp_version(void);

#ifdef __cplusplus
}
#endif
#endif
