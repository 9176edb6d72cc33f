# style.gp — what every qplot figure shares; loaded first by each KIND.gp.
#
# Inputs (gnuplot -e): term = 'pngcairo' | 'pdfcairo' | 'svg', out = the
# file to write; optional width, height in inches (default 3.5 x 2.6: one
# column of a two-column paper).
#
# Sizes: text is 9 pt at the figure's printed size in every format. The
# cairo terminals measure fonts at 96 units per inch, so pdfcairo needs
# fontscale 72/96 for 9 pt to be 9 pt, and the PNG (300 dpi, for slides and
# print, or dpi from qplot's QP_PNG_DPI: 150 for a web page) needs dpi/96;
# the SVG is 96 px per inch, so its 12 px is 9 pt.
# Line widths and point sizes are matched by measurement: as thick and as
# big in the PNG as in the PDF rendered at 300 dpi, and the SVG's lines as
# thick as the PDF's, so the formats look alike.
if (!exists("width")) width = 3.5
if (!exists("height")) height = 2.6
if (!exists("dpi")) dpi = 300
font = "Helvetica,9"
if (term eq "pdfcairo") {
    eval sprintf("set terminal pdfcairo enhanced color size %.3fin,%.3fin font '%s' fontscale 0.75 linewidth 1.5", width, height, font)
} else {
    if (term eq "pngcairo") {
        eval sprintf("set terminal pngcairo enhanced color size %d,%d font '%s' fontscale %.4f linewidth %.4f pointscale %.4f background rgb 'white'", int(width*dpi + 0.5), int(height*dpi + 0.5), font, dpi/96.0, 3.5*dpi/300.0, 4.14*dpi/300.0)
    } else {
        if (term eq "svg") {
            eval sprintf("set terminal svg enhanced size %d,%d font 'Helvetica,12' linewidth 1.12 background rgb 'white'", int(width*96 + 0.5), int(height*96 + 0.5))
        } else {
            print sprintf("style.gp: unknown term '%s'", term)
            exit status 1
        }
    }
}
set output out

set border 3 lw 0.8
set tics nomirror out scale 0.6
set grid back lc rgb "#e5e5e5" lw 0.6
set key noautotitle samplen 2 spacing 1.0 reverse Left

# The raw training loss is drawn faint behind its smoothed curve: the same
# colour, 75% transparent ("#AARRGGBB", AA = 00 opaque .. FF invisible).
faint(c) = "#C0".c[2:7]
